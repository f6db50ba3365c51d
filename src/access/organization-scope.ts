import { type RawBuilder, sql } from 'kysely'
import { acrossOrganizations } from '../../db/across-organizations.js'
import type { Db } from '../../db/database.js'
import { forbidden, notFound } from '../errors.js'

/** Who is acting: every operation on an organization's records is confined to that organization. */
export interface Actor {
  userId: number
  organizationId: number
}

/**
 * The specification's organization rule, for every kind of record: a record of another
 * organization is 403, a missing one 404. `ownerOrganizationId` comes from `ownerOrganization`, the
 * one cross-tenant probe, which returns nothing but the owner's id.
 */
export function missingRecord(
  resource: string,
  id: number,
  ownerOrganizationId: number | undefined,
  actor: Actor,
): never {
  if (ownerOrganizationId !== undefined && ownerOrganizationId !== actor.organizationId) {
    throw forbidden(`The ${resource.toLowerCase()} belongs to another organization`)
  }
  throw notFound(`${resource} ${id}`)
}

/** The tables of records the organization rule covers. */
export type OwnedTable =
  | 'appointments'
  | 'documents'
  | 'encounters'
  | 'invoices'
  | 'patients'
  | 'providers'
  | 'telehealth_rooms'
  | 'webhooks'

// A deleted patient, and a document not (or no longer) available, are missing for everyone.
const STILL_THERE: Partial<Record<OwnedTable, RawBuilder<unknown>>> = {
  patients: sql`and deleted_at is null`,
  documents: sql`and status = 'AVAILABLE'`,
}

/**
 * The organization of a record, whatever the caller's: the one query that crosses tenants, used
 * only to tell "not yours" (403) from "does not exist" (404). It returns nothing of the record.
 */
export async function ownerOrganization(db: Db, table: OwnedTable, id: number): Promise<number | undefined> {
  const { rows } = await sql<{ organization_id: number }>`${acrossOrganizations('owner probe')}
    select organization_id from ${sql.table(table)} where id = ${id} ${STILL_THERE[table] ?? sql``}`.execute(
    db,
  )
  return rows[0]?.organization_id
}
