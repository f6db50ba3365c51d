import type { Db } from '../../../db/database.js'
import type { DocumentRow } from '../../../db/tables/documents.js'
import { missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { gone } from '../../errors.js'
import type { ReadScope } from './resource-type.js'
import { checkLaunchPatient } from './scopes.js'

// The document rows DocumentReference and Binary serve.

/** A document row with the Practitioner (provider) account that uploaded it, if the uploader is one. */
export type DocumentWithAuthor = DocumentRow & { author_provider_id: number | null }

/** Documents of the organization (any status), each with its uploader's provider id if any. */
export const documentsWithAuthor = (db: Db, organizationId: number) =>
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

/** The Practitioner (provider) ids of the organization's users among `userIds`, by user id. */
export async function providersOfUsers(
  db: Db,
  organizationId: number,
  userIds: readonly number[],
): Promise<Map<number, number>> {
  if (userIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('providers')
    .select(['id', 'user_id'])
    .where('organization_id', '=', organizationId)
    .where('user_id', 'in', [...new Set(userIds)])
    .execute()
  return new Map(rows.flatMap((row) => (row.user_id === null ? [] : [[row.user_id, row.id] as const])))
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
  checkLaunchPatient(scope, row.patient_id)
  if (row.status !== 'AVAILABLE') {
    throw gone(`Document ${id} was deleted`)
  }
  return row
}
