import type { CodeableConcept, DocumentReference } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { DocumentRow } from '../../../db/tables/documents.js'
import { missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import {
  countMatches,
  dateCondition,
  inCompartment,
  keysetPage,
  present,
  referenceParameter,
  type SearchColumns,
  sortParameters,
  tokenValues,
  whereCommon,
  whereOneOf,
  whereReferences,
} from './search-conditions.js'
import { occurrences, type SearchQuery } from './search-params.js'

const COLUMNS: SearchColumns = {
  id: 'documents.id',
  updatedAt: 'documents.updated_at',
  sortDates: { date: 'documents.created_at' },
}

/** Our document categories as a code system of our own: no standard one says the same. */
const DOCUMENT_CATEGORY_SYSTEM = 'urn:ehr-service:document-category'

const CATEGORY_NAMES: Record<string, string> = {
  LAB_REPORT: 'Laboratory report',
  IMAGING: 'Imaging',
  CONSENT: 'Consent',
  REFERRAL: 'Referral',
  CLINICAL_NOTE: 'Clinical note',
  OTHER: 'Other',
}

// Attachment.size is an unsignedInt; a larger upload (MAX_UPLOAD_BYTES allows up to 5 GiB) leaves it out.
const UNSIGNED_INT_MAX = 2_147_483_647

/** A document row with the Practitioner (provider) account that uploaded it, if the uploader is one. */
export type DocumentWithAuthor = DocumentRow & { author_provider_id: number | null }

export interface DocumentReferenceMapping {
  /** The FHIR base URL (`<PUBLIC_URL>/fhir/R4`): attachments link to `<base>/Binary/<id>`. */
  base: string
}

function categoryConcept(category: string): CodeableConcept {
  const name = CATEGORY_NAMES[category] ?? category
  return { coding: [{ system: DOCUMENT_CATEGORY_SYSTEM, code: category, display: name }], text: name }
}

/**
 * A stored document as FHIR R4 DocumentReference. The SHA-256 we keep is not put in
 * `attachment.hash`, which R4 defines as SHA-1; the Binary's raw download carries it as its ETag.
 */
function toFhirDocumentReference(row: DocumentWithAuthor, base: string): DocumentReference & { id: string } {
  const size = row.size_bytes === null ? undefined : Number(row.size_bytes)
  const concept = categoryConcept(row.category)
  return present({
    resourceType: 'DocumentReference' as const,
    id: String(row.id),
    meta: { versionId: String(row.version), lastUpdated: row.updated_at.toISOString() },
    // Only stored documents are served: a deleted one is gone (410), never `entered-in-error`.
    status: 'current' as const,
    docStatus: 'final' as const,
    type: concept,
    category: [concept],
    subject: { reference: `Patient/${row.patient_id}` },
    date: row.created_at.toISOString(),
    author:
      row.author_provider_id === null ? undefined : [{ reference: `Practitioner/${row.author_provider_id}` }],
    description: row.title || undefined,
    content: [
      {
        attachment: present({
          contentType: row.content_type,
          url: `${base}/Binary/${row.id}`,
          size: size !== undefined && size <= UNSIGNED_INT_MAX ? size : undefined,
          title: row.file_name || undefined,
          creation: row.created_at.toISOString(),
        }),
      },
    ],
    context:
      row.encounter_id === null ? undefined : { encounter: [{ reference: `Encounter/${row.encounter_id}` }] },
  }) as DocumentReference & { id: string }
}

/** Documents of the organization (any status), each with its uploader's provider id if any. */
const documentsWithAuthor = (db: Db, organizationId: number) =>
  db
    .selectFrom('documents')
    .innerJoin('patients', 'patients.id', 'documents.patient_id')
    .leftJoin('providers', (join) =>
      join
        .onRef('providers.user_id', '=', 'documents.uploaded_by')
        .onRef('providers.organization_id', '=', 'documents.organization_id'),
    )
    .selectAll('documents')
    .select(['providers.id as author_provider_id', 'patients.deleted_at as patient_deleted_at'])
    .where('documents.organization_id', '=', organizationId)

type DocumentQuery = ReturnType<typeof documentsOf>

/**
 * The stored documents the scope may see: the organization's, of live patients (a deleted
 * patient's records are not shown, as with every other clinical type), and the launch patient's only.
 */
const documentsOf = (db: Db, scope: ReadScope) => {
  const query = documentsWithAuthor(db, scope.actor.organizationId)
    .where('documents.status', '=', 'AVAILABLE')
    // Implied by AVAILABLE; stated so the planner can use the partial index, as the REST list does.
    .where('documents.deleted_at', 'is', null)
    .where('patients.deleted_at', 'is', null)
  return inCompartment(query, scope, 'documents.patient_id')
}

/**
 * The stored document the scope may read: 403 for another organization's or (SMART launch) another
 * patient's, 410 when it was deleted, 404 when there is none (or its upload never finished).
 */
export async function readableDocument(db: Db, scope: ReadScope, id: number): Promise<DocumentWithAuthor> {
  const row = await documentsWithAuthor(db, scope.actor.organizationId)
    .where('documents.id', '=', id)
    .executeTakeFirst()
  // A deleted patient's documents are missing, as their other records are.
  if (!row || row.status === 'PENDING' || row.patient_deleted_at !== null) {
    return missingRecord('Document', id, await ownerOrganization(db, 'documents', id), scope.actor)
  }
  if (scope.patient !== undefined && row.patient_id !== scope.patient) {
    throw new AppError('AUTH_003', 'The token is limited to another patient’s records')
  }
  if (row.status !== 'AVAILABLE') {
    throw new AppError('RES_001', `Document ${id} was deleted`, { status: 410, message: 'Gone' })
  }
  return row
}

function filtered(query: DocumentQuery, search: SearchQuery): DocumentQuery {
  let result = whereCommon(query, search, COLUMNS)
  result = whereReferences(result, search, 'patient', 'Patient', 'documents.patient_id')
  // `type` and `category` carry the same code (our category), so they search the same column.
  for (const name of ['category', 'type']) {
    for (const values of occurrences(search, name)) {
      const codes = tokenValues(values, DOCUMENT_CATEGORY_SYSTEM)
      result = whereOneOf(result, 'documents.category', codes)
    }
  }
  for (const values of occurrences(search, 'date')) {
    result = result.where((eb) =>
      eb.or(values.map((value) => dateCondition(eb, 'documents.created_at', value, 'instant'))),
    )
  }
  return result
}

const codes = Object.keys(CATEGORY_NAMES).join(' | ')

/** DocumentReference: the stored documents of the practice's patients, their bytes as Binary. */
export function documentReferenceResource(
  mapping: DocumentReferenceMapping,
): FhirResourceType<DocumentReference> {
  return {
    type: 'DocumentReference',
    // The REST API reads a document's metadata only through the patient's list.
    restRead: 'GET /api/patients/:patientId/documents',
    restSearch: 'GET /api/patients/:patientId/documents',
    sortParameters: sortParameters(COLUMNS),
    searchParameters: [
      referenceParameter('patient', 'Patient'),
      {
        name: 'category',
        type: 'token',
        documentation: `Category, system ${DOCUMENT_CATEGORY_SYSTEM}: ${codes}`,
      },
      {
        name: 'type',
        type: 'token',
        documentation: `Kind of document (the category), system ${DOCUMENT_CATEGORY_SYSTEM}`,
      },
      { name: 'date', type: 'date', documentation: 'When it was stored (prefixes eq, ne, gt, lt, ge, le)' },
    ],
    async read(db, scope, id) {
      return toFhirDocumentReference(await readableDocument(db, scope, id), mapping.base)
    },
    search: (db, scope, query, page) =>
      keysetPage(filtered(documentsOf(db, scope), query), COLUMNS, page, (row) =>
        toFhirDocumentReference(row, mapping.base),
      ),
    count: (db, scope, query) => countMatches(filtered(documentsOf(db, scope), query)),
    includes: {
      patient: (resource) => (resource.subject?.reference ? [resource.subject.reference] : []),
    },
  }
}
