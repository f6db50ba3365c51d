import type { Updateable } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { OrganizationsTable } from '../../../db/tables/organizations.js'
import { changesRecord } from '../../lib/versions.js'

// The organizations table holds one row per organization, keyed by its own id: a caller's
// organization is the row whose id is the caller's organization id.

export const findOrganizationRow = (db: Db, organizationId: number) =>
  db.selectFrom('organizations').selectAll().where('id', '=', organizationId).executeTakeFirst()

export const lockOrganizationRow = (trx: Trx, organizationId: number) =>
  trx.selectFrom('organizations').selectAll().where('id', '=', organizationId).forUpdate().executeTakeFirst()

/** Changes the row if that changes something (the database raises its version); undefined otherwise. */
export const updateOrganizationRow = (
  trx: Trx,
  organizationId: number,
  changes: Updateable<OrganizationsTable>,
) =>
  trx
    .updateTable('organizations')
    .set(changes)
    .where('id', '=', organizationId)
    .where(changesRecord(changes))
    .returningAll()
    .executeTakeFirst()
