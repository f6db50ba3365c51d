import { createHash } from 'node:crypto'
import type { DocumentReference } from '@medplum/fhirtypes'
import { type Static, Type } from '@sinclair/typebox'
import type { Db } from '../../../db/database.js'
import { Id } from '../../../schemas/common.js'
import { DocumentFields } from '../../../schemas/documents.js'
import type { Actor } from '../../access/organization-scope.js'
import { AppError, invalidField, invalidFields, preconditionFailed } from '../../errors.js'
import {
  checkDeclaredType,
  createDocument,
  type DocumentStorage,
  deleteDocument,
  safeFileName,
} from '../documents/service.js'
import { categoryOf } from './document-codes.js'
import { type DocumentWithAuthor, readableDocument } from './document-rows.js'
import { withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'
import { idIn, referenced, referencedId } from './written-references.js'

/**
 * The REST upload a DocumentReference stands for: its patient, the upload's fields, and its one
 * attachment (the bytes inline, base64, with their type and file name). `url` is the attachment's
 * link to its Binary, which the server sets.
 */
const DocumentBody = Type.Object(
  {
    patientId: Id,
    ...DocumentFields.properties,
    contentType: Type.String(),
    fileName: Type.Optional(Type.String()),
    data: Type.Optional(Type.String()),
    url: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
)
type DocumentBody = Static<typeof DocumentBody>

const ATTACHMENT = 'DocumentReference.content[0].attachment'

const IMMUTABLE =
  'cannot change: a stored document is never changed; create a new DocumentReference (and delete this one if it is wrong)'

// The columns of the row a preview renders besides the body's: nothing a comparison looks at.
const PREVIEW_TIME = new Date(0)
const PREVIEW_ROW = {
  sha256: null,
  storage_key: '',
  status: 'AVAILABLE',
  uploaded_by: 0,
  updated_at: PREVIEW_TIME,
  version: 1,
  deleted_at: null,
  deleted_by: null,
  purged_at: null,
}

const bytesOf = (data: string) => Buffer.from(data, 'base64')

/** What a body says otherwise than the stored document: the fields it would change. */
function changedFields(row: DocumentWithAuthor, body: DocumentBody): string[] {
  const said: [string, unknown, unknown][] = [
    ['patientId', body.patientId, row.patient_id],
    ['title', body.title, row.title],
    ['category', body.category, row.category],
    ['encounterId', body.encounterId ?? null, row.encounter_id],
    ['contentType', body.contentType, row.content_type],
    ['fileName', safeFileName(body.fileName), row.file_name],
  ]
  const changed = said.filter(([, sent, stored]) => sent !== stored).map(([field]) => field)
  if (body.data !== undefined) {
    const sha256 = createHash('sha256').update(bytesOf(body.data)).digest('hex')
    if (sha256 !== row.sha256) changed.push('data')
  }
  return changed
}

export interface DocumentWritesOptions {
  storage: DocumentStorage
  toFhir(row: DocumentWithAuthor): DocumentReference & { id: string }
}

/**
 * DocumentReference writes through the documents service: a create stores the attachment's inline
 * bytes as the REST upload (`POST /api/patients/{patientId}/documents`) stores its file, DELETE is
 * `DELETE /api/documents/{documentId}`. No REST route changes a document: an update may only write
 * it back as it is (200, no new version); a change is refused.
 */
export function documentWrites({
  storage,
  toFhir,
}: DocumentWritesOptions): ResourceWrites<DocumentReference, DocumentBody> {
  const read = async (db: Db, actor: Actor, id: number) =>
    readableDocument(db, { actor, patient: undefined }, id)

  return {
    rest: {
      create: 'POST /api/patients/:patientId/documents',
      // An update changes nothing, and answers the document as it is: reading it, under its roles and audit.
      update: 'GET /api/patients/:patientId/documents',
      delete: 'DELETE /api/documents/:documentId',
    },
    bodySchema: DocumentBody,
    fieldExpressions: {
      patientId: 'DocumentReference.subject',
      title: 'DocumentReference.description',
      category: 'DocumentReference.category',
      encounterId: 'DocumentReference.context.encounter',
      contentType: `${ATTACHMENT}.contentType`,
      fileName: `${ATTACHMENT}.title`,
      data: `${ATTACHMENT}.data`,
      url: `${ATTACHMENT}.url`,
    },
    bodyOf(document) {
      const attachment = document.content?.[0]?.attachment
      return withoutUndefined({
        patientId: idIn(document.subject, 'Patient', 'patientId'),
        title: document.description,
        category: categoryOf(document),
        encounterId: idIn(document.context?.encounter?.[0], 'Encounter', 'encounterId'),
        contentType: attachment?.contentType,
        fileName: attachment?.title,
        data: attachment?.data,
        url: attachment?.url,
      }) as DocumentBody
    },
    preview(body, current, organizationId) {
      if (current === undefined && body.url !== undefined) {
        throw invalidField(
          `${ATTACHMENT}.url`,
          'is set by this server (the Binary of the new document): send the bytes in attachment.data, base64, or POST them to Binary',
        )
      }
      const attachment = current?.content[0]?.attachment
      const previewed = toFhir({
        ...PREVIEW_ROW,
        id: current === undefined ? 0 : Number(current.id),
        organization_id: organizationId,
        patient_id: body.patientId,
        encounter_id: body.encounterId ?? null,
        title: body.title,
        category: body.category,
        content_type: body.contentType,
        file_name: safeFileName(body.fileName),
        size_bytes: body.data === undefined ? (attachment?.size ?? null) : bytesOf(body.data).length,
        // Set when it is stored, and by whom: an update keeps them.
        created_at: current?.date === undefined ? PREVIEW_TIME : new Date(current.date),
        author_provider_id: referencedId(current?.author?.[0], 'Practitioner') ?? null,
      })
      const [content] = previewed.content
      if (body.data === undefined || content === undefined) return previewed
      // The bytes sent are kept, as the Binary the attachment links to: a read has the link alone.
      return { ...previewed, content: [{ attachment: { ...content.attachment, data: body.data } }] }
    },
    patientOf: (document) => referencedId(document.subject, 'Patient'),
    async create(db, actor, body) {
      if (db.isTransaction) {
        throw invalidField(
          'DocumentReference',
          'is created on its own (POST DocumentReference or Binary), not in a Bundle: its bytes are stored outside the database transaction',
        )
      }
      if (body.data === undefined) {
        throw invalidField('data', 'is required: the document’s bytes, base64 (or POST them to Binary)')
      }
      try {
        checkDeclaredType(body.contentType)
      } catch (error) {
        throw error instanceof AppError ? invalidField('contentType', error.details) : error
      }
      const { patientId, title, category, encounterId } = body
      const document = {
        patientId,
        fields: withoutUndefined({ title, category, encounterId }) as DocumentFields,
        contentType: body.contentType,
        fileName: body.fileName,
      }
      let stored: { id: number }
      try {
        // The patient is the only record the service looks up that may be missing (404).
        stored = await referenced('patientId', `Patient/${patientId}`, () =>
          createDocument(db, storage, actor, document, [bytesOf(body.data as string)]),
        )
      } catch (error) {
        // The type is one accepted: a 415 now is bytes that are not of that type.
        if (error instanceof AppError && error.status === 415) throw invalidField('data', error.details)
        throw error
      }
      return toFhir(await read(db, actor, stored.id))
    },
    async update(db, actor, id, body, expected) {
      const row = await read(db, actor, id)
      if (expected !== undefined && expected !== row.version) throw preconditionFailed(row.version)
      const changed = changedFields(row, body)
      if (changed.length > 0) {
        throw invalidFields(changed.map((path) => ({ path, message: IMMUTABLE })))
      }
      return toFhir(row)
    },
    async delete(db, actor, id, expected) {
      await deleteDocument(db, storage.store, actor, id, storage.retentionDays, expected)
    },
  }
}
