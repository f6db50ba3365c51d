import type { DocumentReference } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { DocumentStorage } from '../documents/service.js'
import {
  CATEGORY_NAMES,
  CATEGORY_SYSTEMS,
  categoriesNamed,
  categoryConcepts,
  DOCUMENT_CATEGORY_SYSTEM,
  MIME_TYPE_SUFFICIENT,
  TYPE_SYSTEMS,
  typeConcept,
} from './document-codes.js'
import {
  type DocumentWithAuthor,
  documentsWithAuthor,
  providersOfUsers,
  readableDocument,
} from './document-rows.js'
import { documentWrites } from './document-writes.js'
import { keptVersions } from './kept-versions.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, recordResource, reference, referencesTo, withoutUndefined } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import { dateParameter, nothing, referenceParameter, type SearchParameter } from './search-conditions.js'
import { US_CORE_DOCUMENT_REFERENCE } from './us-core-profiles.js'

// Attachment.size is an unsignedInt; a larger upload (MAX_UPLOAD_BYTES allows up to 5 GiB) leaves it out.
const UNSIGNED_INT_MAX = 2_147_483_647

export interface DocumentReferenceMapping {
  /** The FHIR base URL (`<PUBLIC_URL>/fhir/R4`): attachments link to `<base>/Binary/<id>`. */
  base: string
  /** Where the documents a DocumentReference create stores go, and their size limit. */
  documents: DocumentStorage
}

/**
 * A stored document as FHIR R4 DocumentReference. The SHA-256 we keep is not put in
 * `attachment.hash`, which R4 defines as SHA-1; the Binary's raw download carries it as its ETag.
 * Every document is kept by the practice (custodian). US Core's identifier and context.period are
 * left out: the service holds no business identifier of a document and no period it covers.
 */
function toFhirDocumentReference(row: DocumentWithAuthor, base: string): DocumentReference & { id: string } {
  const size = row.size_bytes === null ? undefined : Number(row.size_bytes)
  const document = recordResource<DocumentReference>('DocumentReference', row, {
    // Only stored documents are served: a deleted one is gone (410), never `entered-in-error`.
    status: 'current',
    docStatus: 'final',
    type: typeConcept(row.category),
    category: categoryConcepts(row.category),
    subject: reference('Patient', row.patient_id),
    date: row.created_at.toISOString(),
    author: row.author_provider_id === null ? undefined : [reference('Practitioner', row.author_provider_id)],
    custodian: reference('Organization', row.organization_id),
    description: row.title || undefined,
    content: [
      {
        attachment: withoutUndefined({
          contentType: row.content_type,
          url: `${base}/Binary/${row.id}`,
          size: size !== undefined && size <= UNSIGNED_INT_MAX ? size : undefined,
          title: row.file_name || undefined,
          creation: row.created_at.toISOString(),
        }),
        format: MIME_TYPE_SUFFICIENT,
      },
    ],
    context:
      row.encounter_id === null ? undefined : { encounter: [reference('Encounter', row.encounter_id)] },
  })
  return claiming(US_CORE_DOCUMENT_REFERENCE, document)
}

/**
 * The stored documents of the organization's live patients (a deleted patient's records are not
 * shown, as with every other clinical type).
 */
const documentsOf = (db: Db, scope: ReadScope) =>
  documentsWithAuthor(db, scope.actor.organizationId)
    .where('documents.status', '=', 'AVAILABLE')
    // Implied by AVAILABLE; stated so the planner can use the partial index, as the REST list does.
    .where('documents.deleted_at', 'is', null)
    .where('patients.deleted_at', 'is', null)

const codes = Object.keys(CATEGORY_NAMES).join(' | ')

/**
 * `type` and `category` both stand for our category, so they search its column, by any code the
 * read puts in them (ours, the LOINC type, US Core's clinical-note).
 */
const categorySearch = (
  name: string,
  documentation: string,
  systems: readonly string[],
): SearchParameter => ({
  name,
  type: 'token',
  documentation,
  where(query, values) {
    const named = categoriesNamed(values, systems)
    return named.length === 0 ? query.where(nothing) : query.where('documents.category', 'in', named)
  },
})

/** DocumentReference: the stored documents of the practice's patients, their bytes as Binary. */
export function documentReferenceResource(
  mapping: DocumentReferenceMapping,
): FhirResourceType<DocumentReference> {
  const toFhir = (row: DocumentWithAuthor) => toFhirDocumentReference(row, mapping.base)
  return defineResourceType({
    type: 'DocumentReference',
    profile: US_CORE_DOCUMENT_REFERENCE,
    // The REST API reads a document's metadata only through the patient's list.
    restRead: 'GET /api/patients/:patientId/documents',
    restSearch: 'GET /api/patients/:patientId/documents',
    records: documentsOf,
    patientColumn: 'documents.patient_id',
    columns: {
      id: 'documents.id',
      updatedAt: 'documents.updated_at',
      sortDates: { date: 'documents.created_at' },
    },
    searchParameters: [
      referenceParameter('patient', 'Patient', 'documents.patient_id'),
      categorySearch(
        'category',
        `Category, system ${DOCUMENT_CATEGORY_SYSTEM}: ${codes}; or US Core's clinical-note`,
        CATEGORY_SYSTEMS,
      ),
      categorySearch(
        'type',
        `Kind of document: the category (system ${DOCUMENT_CATEGORY_SYSTEM}) or its LOINC document type`,
        TYPE_SYSTEMS,
      ),
      dateParameter('date', 'When it was stored', 'documents.created_at', 'instant'),
    ],
    includes: { patient: (resource) => referencesTo('Patient', [resource.subject]) },
    toFhir,
    // A document's versions: stored (its create), then deleted. Its upload's PENDING version and
    // the purge of its bytes are not changes of the record.
    versions: keptVersions(
      'documents',
      (row, authors: Map<number, number>) =>
        toFhir({ ...row, author_provider_id: authors.get(row.uploaded_by) ?? null }),
      {
        patientColumn: 'patient_id',
        shown: { status: ['AVAILABLE', 'DELETED'], purged_at: [null] },
        created: (row) => row.status === 'AVAILABLE',
        deleted: (row) => row.status === 'DELETED',
        context: (db, organizationId, rows) =>
          providersOfUsers(
            db,
            organizationId,
            rows.map((row) => row.uploaded_by),
          ),
      },
    ),
    read: async (db, scope, id) => toFhir(await readableDocument(db, scope, id)),
    writes: documentWrites({ storage: mapping.documents, toFhir }),
  })
}
