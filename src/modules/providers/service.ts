import { type Db, inTransaction, type Trx } from '../../../db/database.js'
import type { ProviderRow } from '../../../db/tables/providers.js'
import {
  type CreateProviderBody,
  type ExceptionBody,
  type PatchProviderBody,
  type Provider,
  type ProviderListQuery,
  type ScheduleException,
  UpdateProviderBody,
  type WeeklyHoursBody,
  type WorkingInterval,
} from '../../../schemas/providers.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { invalidField, invalidFields, notFound } from '../../errors.js'
import { patchRecord, projectOnto } from '../../lib/merge-patch.js'
import { sortOrder, splitListQuery } from '../../lib/paging.js'
import { type RecordList, recordList, withLookup } from '../../lib/row-list.js'
import { atExpectedVersion, type ExpectedVersion, touch } from '../../lib/versions.js'
import { type Interval, workingIntervals } from '../../scheduling/availability.js'
import { canonicalTimeZone, minutesOf } from '../../scheduling/zoned-time.js'
import {
  hoursRows,
  providerColumns,
  toProvider,
  toScheduleException,
  toWorkingInterval,
  weekdayOf,
} from './mapper.js'
import { isValidNpi } from './npi.js'

// The NPI rule, for the practice's own NPI too.
export { isValidNpi }

import {
  deleteException,
  exceptionsBetween,
  insertException,
  isUserOfOrganization,
  lockProviderCalendar,
  PROVIDER_SORT_COLUMNS,
  providerRecords,
  providerRows,
  replaceWeeklyHours as replaceWeeklyHourRows,
  weeklyHoursOf,
} from './queries.js'

const DEFAULT_SLOT_MINUTES = 30

/** The spec's organization rule for providers: another organization's is 403, a missing one 404. */
async function missingProvider(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('Provider', id, await ownerOrganization(db, 'providers', id), actor)
}

/** The provider locked for a change of it (its record, hours or exceptions), at the version `If-Match` names. */
async function lockProviderAt(trx: Trx, actor: Actor, id: number, expectedVersion: ExpectedVersion) {
  const locked = await providerRecords.lock(trx, actor.organizationId, id)
  return atExpectedVersion(locked, expectedVersion, () => missingProvider(trx, actor, id))
}

/** The organization's provider with this id, if there is one (no 403/404 rule: the caller decides). */
export const findProviderOfOrganization = (db: Db, organizationId: number, id: number) =>
  providerRecords.find(db, organizationId, id)

/** The provider, if it is of the caller's organization; otherwise 403 or 404. */
export async function requireProvider(db: Db, actor: Actor, id: number): Promise<ProviderRow> {
  return (await providerRecords.find(db, actor.organizationId, id)) ?? missingProvider(db, actor, id)
}

/** The provider for a booking onto its calendar, locked against other bookings (lockProviderCalendar). */
export async function requireProviderForBooking(trx: Trx, actor: Actor, id: number): Promise<ProviderRow> {
  return (await lockProviderCalendar(trx, actor.organizationId, id)) ?? missingProvider(trx, actor, id)
}

/** Checks what the schema cannot; returns the zone's canonical name. */
async function checkProvider(db: Db, actor: Actor, body: UpdateProviderBody): Promise<string> {
  if (!isValidNpi(body.npi)) throw invalidField('npi', 'fails the NPI check digit')
  const timeZone = canonicalTimeZone(body.timeZone)
  if (!timeZone) {
    throw invalidFields(
      [{ path: 'timeZone', message: 'is not a known IANA time zone' }],
      `timeZone ${body.timeZone} is not a known IANA time zone`,
    )
  }
  if (body.userId && !(await isUserOfOrganization(db, actor.organizationId, body.userId))) {
    throw invalidField('userId', 'is not a user of this organization')
  }
  return timeZone
}

function checkWeeklyHours(weeklyHours: readonly WorkingInterval[]): void {
  weeklyHours.forEach((interval, index) => {
    if (minutesOf(interval.endTime) <= minutesOf(interval.startTime)) {
      throw invalidField(`weeklyHours.${index}.endTime`, 'must be after startTime')
    }
    const overlapping = weeklyHours.findIndex(
      (other, otherIndex) =>
        otherIndex !== index &&
        other.dayOfWeek === interval.dayOfWeek &&
        minutesOf(other.startTime) < minutesOf(interval.endTime) &&
        minutesOf(interval.startTime) < minutesOf(other.endTime),
    )
    if (overlapping >= 0) throw invalidField(`weeklyHours.${index}`, `overlaps weeklyHours.${overlapping}`)
  })
}

export async function createProvider(db: Db, actor: Actor, body: CreateProviderBody): Promise<Provider> {
  const weeklyHours = body.weeklyHours ?? []
  checkWeeklyHours(weeklyHours)
  return inTransaction(db, async (trx) => {
    const row = await addProvider(trx, actor, body)
    await replaceWeeklyHourRows(
      trx,
      actor.organizationId,
      row.id,
      hoursRows(actor.organizationId, row.id, weeklyHours),
    )
    return toProvider(row, await weeklyHoursOf(trx, actor.organizationId, [row.id]))
  })
}

/** Adds a provider with no weekly hours yet: the row as stored. */
export const insertProvider = (db: Db, actor: Actor, body: UpdateProviderBody): Promise<ProviderRow> =>
  inTransaction(db, (trx) => addProvider(trx, actor, body))

async function addProvider(trx: Trx, actor: Actor, body: UpdateProviderBody): Promise<ProviderRow> {
  const timeZone = await checkProvider(trx, actor, body)
  return providerRecords.insert(trx, {
    ...providerColumns(body, timeZone),
    organization_id: actor.organizationId,
    active: body.active ?? true,
    slot_minutes: body.slotMinutes ?? DEFAULT_SLOT_MINUTES,
    created_by: actor.userId,
    updated_by: actor.userId,
  })
}

export async function getProvider(db: Db, actor: Actor, id: number): Promise<Provider> {
  const row = await requireProvider(db, actor, id)
  return toProvider(row, await weeklyHoursOf(db, actor.organizationId, [row.id]))
}

export async function updateProvider(
  db: Db,
  actor: Actor,
  id: number,
  body: UpdateProviderBody,
  expectedVersion: ExpectedVersion,
): Promise<Provider> {
  return inTransaction(db, async (trx) => {
    const row = await replaceProviderRecord(trx, actor, id, expectedVersion, () => body)
    return toProvider(row, await weeklyHoursOf(trx, actor.organizationId, [id]))
  })
}

/**
 * updateProvider for a body that does not speak of the provider's user account: the link stays as
 * it is. Answers the row as stored.
 */
export const replaceProvider = (
  db: Db,
  actor: Actor,
  id: number,
  body: Omit<UpdateProviderBody, 'userId'>,
  expectedVersion: ExpectedVersion,
): Promise<ProviderRow> =>
  inTransaction(db, (trx) =>
    replaceProviderRecord(trx, actor, id, expectedVersion, (current) => ({
      ...body,
      userId: current.user_id,
    })),
  )

/**
 * Replaces the provider's record (not its weekly hours) with the body made of the record as held
 * under its lock; a body that is what the record holds changes nothing, and keeps the version.
 */
async function replaceProviderRecord(
  trx: Trx,
  actor: Actor,
  id: number,
  expectedVersion: ExpectedVersion,
  bodyOf: (current: ProviderRow) => UpdateProviderBody,
): Promise<ProviderRow> {
  const current = await lockProviderAt(trx, actor, id, expectedVersion)
  const body = bodyOf(current)
  const timeZone = await checkProvider(trx, actor, body)
  const updated = await providerRecords.update(trx, actor.organizationId, id, {
    ...providerColumns(body, timeZone),
    active: body.active ?? current.active,
    slot_minutes: body.slotMinutes ?? current.slot_minutes,
    updated_by: actor.userId,
  })
  return updated ?? current
}

/** A JSON Merge Patch of the provider record: the merged record is checked like a full replacement. */
export async function patchProvider(
  db: Db,
  actor: Actor,
  id: number,
  patch: PatchProviderBody,
  expectedVersion: ExpectedVersion,
  validate: (merged: unknown) => UpdateProviderBody,
): Promise<Provider> {
  return patchRecord({
    patch,
    expected: expectedVersion,
    read: () => getProvider(db, actor, id),
    bodyOf: (provider) => projectOnto(UpdateProviderBody, provider),
    validate,
    write: (body, version) => updateProvider(db, actor, id, body, version),
  })
}

/** The weekly hours as a set: the same intervals in another order are the same hours. */
const hoursKey = (weeklyHours: readonly WorkingInterval[]) =>
  weeklyHours
    .map((interval) =>
      [weekdayOf(interval.dayOfWeek), minutesOf(interval.startTime), minutesOf(interval.endTime)].join(' '),
    )
    .sort()
    .join(',')

/** Replaces the weekly hours, a change of the provider: its version rises (unless the hours are the same). */
export async function replaceWeeklyHours(
  db: Db,
  actor: Actor,
  id: number,
  body: WeeklyHoursBody,
  expectedVersion: ExpectedVersion,
): Promise<Provider> {
  checkWeeklyHours(body.weeklyHours)
  return inTransaction(db, async (trx) => {
    const current = await lockProviderAt(trx, actor, id, expectedVersion)
    const hours = await weeklyHoursOf(trx, actor.organizationId, [id])
    if (hoursKey(hours.map(toWorkingInterval)) === hoursKey(body.weeklyHours))
      return toProvider(current, hours)
    await replaceWeeklyHourRows(
      trx,
      actor.organizationId,
      id,
      hoursRows(actor.organizationId, id, body.weeklyHours),
    )
    const updated = await providerRecords.update(trx, actor.organizationId, id, {
      ...touch(),
      updated_by: actor.userId,
    })
    return toProvider(updated ?? current, await weeklyHoursOf(trx, actor.organizationId, [id]))
  })
}

function checkException(body: ExceptionBody): void {
  const { startTime, endTime } = body
  if (startTime === undefined && endTime === undefined) {
    if (body.kind === 'EXTRA_HOURS') {
      throw invalidFields(
        ['startTime', 'endTime'].map((path) => ({ path, message: 'is required for EXTRA_HOURS' })),
        'EXTRA_HOURS needs startTime and endTime',
      )
    }
    return
  }
  if (startTime === undefined || endTime === undefined) {
    throw invalidFields(
      [
        {
          path: startTime === undefined ? 'startTime' : 'endTime',
          message: `is required with ${startTime === undefined ? 'endTime' : 'startTime'}`,
        },
      ],
      'startTime and endTime go together (leave both out for a whole day off)',
    )
  }
  if (minutesOf(endTime) <= minutesOf(startTime)) throw invalidField('endTime', 'must be after startTime')
}

/** Adds a dated exception, a change of the provider: its version rises. */
export async function addException(
  db: Db,
  actor: Actor,
  id: number,
  body: ExceptionBody,
  expectedVersion: ExpectedVersion,
): Promise<ScheduleException> {
  checkException(body)
  return inTransaction(db, async (trx) => {
    await lockProviderAt(trx, actor, id, expectedVersion)
    await providerRecords.update(trx, actor.organizationId, id, { ...touch(), updated_by: actor.userId })
    const row = await insertException(trx, {
      provider_id: id,
      organization_id: actor.organizationId,
      date: body.date,
      kind: body.kind,
      start_time: body.startTime ?? null,
      end_time: body.endTime ?? null,
      reason: body.reason ?? null,
      created_by: actor.userId,
    })
    return toScheduleException(row)
  })
}

/** Removes a dated exception, a change of the provider: its version rises. */
export async function removeException(
  db: Db,
  actor: Actor,
  id: number,
  exceptionId: number,
  expectedVersion: ExpectedVersion,
): Promise<{ id: number }> {
  return inTransaction(db, async (trx) => {
    await lockProviderAt(trx, actor, id, expectedVersion)
    if (!(await deleteException(trx, actor.organizationId, id, exceptionId)))
      throw notFound(`Exception ${exceptionId} of provider ${id}`)
    await providerRecords.update(trx, actor.organizationId, id, { ...touch(), updated_by: actor.userId })
    return { id: exceptionId }
  })
}

const DEFAULT_SORT = { field: 'lastName', direction: 'asc' } as const

/** The organization's providers a list query asks for, with their weekly hours. */
export function listProviders(db: Db, actor: Actor, query: ProviderListQuery): RecordList<Provider> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, PROVIDER_SORT_COLUMNS, DEFAULT_SORT)
  const withHours = withLookup((ids) => weeklyHoursOf(db, actor.organizationId, ids), toProvider)
  return recordList(providerRows(db, actor.organizationId, filters), paging, sort, withHours)
}

/** For records that name a provider (e.g. a prescriber): it must be one of this organization's. */
export async function checkProviderOfOrganization(
  db: Db,
  organizationId: number,
  providerId: number,
  field: string,
): Promise<void> {
  if (!(await providerRecords.find(db, organizationId, providerId))) {
    throw invalidField(field, 'is not a provider of your organization')
  }
}

/** A provider's working intervals on each date of a range; none while the provider is inactive. */
export async function workingCalendar(db: Db, provider: ProviderRow, from: string, to: string) {
  const hours = await weeklyHoursOf(db, provider.organization_id, [provider.id])
  const exceptions = await exceptionsBetween(db, provider.organization_id, provider.id, from, to)
  return {
    exceptionsOn: (date: string) => exceptions.filter((e) => e.date === date).map(toScheduleException),
    intervalsOn: (date: string): Interval[] =>
      provider.active ? workingIntervals(date, hours, exceptions) : [],
  }
}

/** The provider's working intervals on one date (what a booking must fit into). */
export async function workingIntervalsOn(db: Db, provider: ProviderRow, date: string): Promise<Interval[]> {
  return (await workingCalendar(db, provider, date, date)).intervalsOn(date)
}

export { dayOfWeek, providerColumns } from './mapper.js'
