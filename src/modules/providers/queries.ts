import { sql } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { NewProviderExceptionRow, ProviderExceptionRow } from '../../../db/tables/provider-exceptions.js'
import type { NewProviderHoursRow, ProviderHoursRow } from '../../../db/tables/provider-hours.js'
import type { PROVIDER_SORT_FIELDS, ProviderListQuery } from '../../../schemas/providers.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import type { ListFilters, SortColumns } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'

export const PROVIDER_SORT_COLUMNS: SortColumns<typeof PROVIDER_SORT_FIELDS> = {
  lastName: 'lower(last_name)',
  firstName: 'lower(first_name)',
  specialty: 'lower(specialty)',
  npi: 'npi',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

/** A change of a provider's hours or exceptions touches its row too (touch()): a change of the provider. */
export const providerRecords = organizationRecords('providers')

/**
 * The provider, its row locked FOR NO KEY UPDATE until the transaction ends: bookings onto its
 * calendar take this lock first, so concurrent ones queue here. Left to meet only in the overlap
 * constraint, two bookings that each inserted before the other's check deadlock there. The lock
 * does not block inserts that merely reference the provider.
 */
export function lockProviderCalendar(trx: Trx, organizationId: number, id: number) {
  return inOrganization(trx, organizationId)
    .selectFrom('providers')
    .selectAll()
    .where('id', '=', id)
    .forNoKeyUpdate()
    .executeTakeFirst()
}

/** The organization's providers matching the filters (providers are never removed, so sync pages have no tombstones). */
export function providerRows(db: Db, organizationId: number, filters: ListFilters<ProviderListQuery>) {
  let query = inOrganization(db, organizationId).selectFrom('providers').selectAll()
  if (filters.active !== undefined) query = query.where('active', '=', filters.active)
  if (filters.npi) query = query.where('npi', '=', filters.npi)
  if (filters.specialty) query = query.where(sql`lower(specialty)`, '=', filters.specialty.toLowerCase())
  if (filters.lastName) query = query.where(sql`lower(last_name)`, '=', filters.lastName.toLowerCase())
  return rowList(db, query)
}

/** Whether the user is an account of the organization (a provider may be linked only to those). */
export async function isUserOfOrganization(db: Db, organizationId: number, userId: number): Promise<boolean> {
  const row = await inOrganization(db, organizationId)
    .selectFrom('users')
    .select('id')
    .where('id', '=', userId)
    .executeTakeFirst()
  return row !== undefined
}

/** Weekly hours of the given providers, by provider, day and start. */
export function weeklyHoursOf(
  db: Db,
  organizationId: number,
  providerIds: number[],
): Promise<ProviderHoursRow[]> {
  if (providerIds.length === 0) return Promise.resolve([])
  return inOrganization(db, organizationId)
    .selectFrom('provider_hours')
    .selectAll()
    .where('provider_id', 'in', providerIds)
    .orderBy('provider_id')
    .orderBy('weekday')
    .orderBy('start_time')
    .execute()
}

/** Scoped by the provider, which the caller has locked in its organization. */
export async function replaceWeeklyHours(
  trx: Trx,
  organizationId: number,
  providerId: number,
  rows: NewProviderHoursRow[],
): Promise<void> {
  await trx
    .deleteFrom('provider_hours')
    .where('organization_id', '=', organizationId)
    .where('provider_id', '=', providerId)
    .execute()
  if (rows.length > 0) await trx.insertInto('provider_hours').values(rows).execute()
}

/** A provider's exceptions dated from `from` to `to`, both included (scoped by the provider, as above). */
export function exceptionsBetween(
  db: Db,
  organizationId: number,
  providerId: number,
  from: string,
  to: string,
): Promise<ProviderExceptionRow[]> {
  return inOrganization(db, organizationId)
    .selectFrom('provider_exceptions')
    .selectAll()
    .where('provider_id', '=', providerId)
    .where('date', '>=', from)
    .where('date', '<=', to)
    .orderBy('date')
    .orderBy('start_time')
    .orderBy('id')
    .execute()
}

/** Scoped by the provider, which the caller has locked in its organization. */
export function insertException(trx: Trx, row: NewProviderExceptionRow): Promise<ProviderExceptionRow> {
  return trx.insertInto('provider_exceptions').values(row).returningAll().executeTakeFirstOrThrow()
}

/** Scoped by the provider, which the caller has locked in its organization. */
export async function deleteException(
  trx: Trx,
  organizationId: number,
  providerId: number,
  exceptionId: number,
): Promise<boolean> {
  const deleted = await trx
    .deleteFrom('provider_exceptions')
    .where('organization_id', '=', organizationId)
    .where('provider_id', '=', providerId)
    .where('id', '=', exceptionId)
    .returning('id')
    .executeTakeFirst()
  return deleted !== undefined
}
