import { type Static, Type } from '@sinclair/typebox'
import {
  Deleted,
  Envelope,
  Id,
  ListQuery,
  Named,
  Nullable,
  Page,
  StringEnum,
  Text,
  Timestamp,
  Version,
} from './common.js'

const DOCUMENT_CATEGORIES = [
  'LAB_REPORT',
  'IMAGING',
  'CONSENT',
  'REFERRAL',
  'CLINICAL_NOTE',
  'OTHER',
] as const
const DOCUMENT_CONTENT_TYPES = [
  'application/pdf',
  'image/png',
  'image/jpeg',
  'image/tiff',
  'application/dicom',
  'text/plain',
] as const

const Category = StringEnum(DOCUMENT_CATEGORIES)

/** The metadata fields of an upload, sent as text before the file part and checked as a query string is. */
export const DocumentFields = Type.Object(
  {
    title: Text(200),
    category: Category,
    encounterId: Type.Optional(Id),
  },
  { additionalProperties: false },
)
export type DocumentFields = Static<typeof DocumentFields>

export const DocumentUploadBody = Named(
  'DocumentUpload',
  Type.Object(
    {
      ...DocumentFields.properties,
      file: Type.String({
        format: 'binary',
        description: `The file, last. Accepted types (checked against the file's first bytes): ${DOCUMENT_CONTENT_TYPES.join(', ')}`,
      }),
    },
    {
      description:
        'multipart/form-data: the fields `title`, `category` and optional `encounterId` first, then one `file` part. The file is streamed to storage; its size is limited by MAX_UPLOAD_BYTES (413 beyond), and a type outside the list, or whose content does not match it, is 415.',
      examples: [{ title: 'Chest X-ray report', category: 'IMAGING', file: '<the file: %PDF-1.7 …>' }],
    },
  ),
)

export const Document = Named(
  'Document',
  Type.Object({
    id: Id,
    patientId: Id,
    encounterId: Nullable(Id),
    title: Type.String(),
    category: Category,
    contentType: Type.String(),
    fileName: Type.String(),
    sizeBytes: Type.Integer(),
    sha256: Type.String({ description: 'Hex SHA-256 of the bytes; also the download ETag' }),
    uploadedBy: Id,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Document = Static<typeof Document>

export const DocumentEnvelope = Envelope(Document)
export const DocumentPageEnvelope = Envelope(Page(Document, { tombstones: true }))
export const DocumentDeletedEnvelope = Envelope(Deleted)

const DOCUMENT_SORT_FIELDS = ['createdAt', 'title'] as const
export const DocumentListQuery = ListQuery(DOCUMENT_SORT_FIELDS, { category: Type.Optional(Category) })
export type DocumentListQuery = Static<typeof DocumentListQuery>

export const PatientIdParams = Type.Object({ patientId: Id }, { additionalProperties: false })
export const DocumentIdParams = Type.Object({ documentId: Id }, { additionalProperties: false })
