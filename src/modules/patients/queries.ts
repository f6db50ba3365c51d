import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { NewPatientRow, PatientRow, PatientRowUpdate } from '../../../db/tables/patients.js'
import type { PageQuery } from '../../../schemas/common.js'
import type { PATIENT_SORT_FIELDS } from '../../../schemas/patients.js'
import {
  countRows,
  fetchPageOfKnownTotal,
  orderByExpression,
  type SortColumns,
  type SortOrder,
} from '../../lib/paging.js'
import { prefixEnd } from '../../lib/prefix-range.js'
import { type SyncRead, syncRows, syncTombstones } from '../../lib/sync-paging.js'
import { changesRecord } from '../../lib/versions.js'
import type { SearchTerms } from './search-terms.js'

/** Sort expressions; names sort case-insensitively, matching the (organization_id, lower(last_name)) index. */
export const PATIENT_SORT_COLUMNS: SortColumns<typeof PATIENT_SORT_FIELDS> = {
  lastName: 'lower(last_name)',
  firstName: 'lower(first_name)',
  dateOfBirth: 'date_of_birth',
  mrn: 'mrn',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

export interface PatientFilters {
  status?: PatientRow['status']
  firstName?: string
  lastName?: string
  dateOfBirth?: string
  gender?: string
  email?: string
  mrn?: string
}

export const PATIENT_COLUMNS = [
  'id',
  'organization_id',
  'mrn',
  'status',
  'first_name',
  'middle_name',
  'last_name',
  'date_of_birth',
  'gender',
  'email',
  'phone_number',
  'address_street',
  'address_city',
  'address_state',
  'address_postal_code',
  'address_country',
  'emergency_contact_name',
  'emergency_contact_relationship',
  'emergency_contact_phone',
  'preferred_language',
  'race_categories',
  'race_detailed',
  'race_text',
  'ethnicity_category',
  'ethnicity_detailed',
  'ethnicity_text',
  'birth_sex',
  'gender_identity',
  'created_by',
  'updated_by',
  'created_at',
  'updated_at',
  'version',
  'deleted_at',
  'deleted_by',
] as const satisfies readonly (keyof PatientRow)[]

export const live = (db: Db, organizationId: number) =>
  db.selectFrom('patients').where('organization_id', '=', organizationId).where('deleted_at', 'is', null)

/** The INSERT of a patient, which returns no row when the MRN is taken in the organization. */
export function insertPatientQuery(db: Db, row: NewPatientRow) {
  return db
    .insertInto('patients')
    .values(row)
    .onConflict((conflict) => conflict.constraint('patients_organization_mrn_key').doNothing())
    .returning(PATIENT_COLUMNS)
}

/**
 * The UPDATE of a live patient, made only if it changes something (changesRecord); with
 * `expectedVersion`, only while the patient is still at that version: check and write in one
 * statement. The database raises the version.
 */
export function updatePatientQuery(
  db: Db,
  organizationId: number,
  id: number,
  changes: PatientRowUpdate,
  expectedVersion?: number,
) {
  let query = db
    .updateTable('patients')
    .set(changes)
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where(changesRecord(changes))
  if (expectedVersion !== undefined) query = query.where('version', '=', expectedVersion)
  return query.returning(PATIENT_COLUMNS)
}

function filteredPatients(db: Db, organizationId: number, filters: PatientFilters) {
  let query = live(db, organizationId).select(PATIENT_COLUMNS)
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.gender) query = query.where('gender', '=', filters.gender)
  if (filters.dateOfBirth) query = query.where('date_of_birth', '=', filters.dateOfBirth)
  if (filters.mrn) query = query.where('mrn', '=', filters.mrn)
  if (filters.firstName) query = query.where(sql`lower(first_name)`, '=', filters.firstName.toLowerCase())
  if (filters.lastName) query = query.where(sql`lower(last_name)`, '=', filters.lastName.toLowerCase())
  if (filters.email) query = query.where(sql`lower(email)`, '=', filters.email.toLowerCase())
  return query
}

/** A page of the organization's live patients matching the filters. */
export function listPatients(
  db: Db,
  organizationId: number,
  filters: PatientFilters,
  sort: SortOrder,
  paging: PageQuery,
) {
  const query = filteredPatients(db, organizationId, filters)
  // The total is counted apart from the page, through the filters' index alone: a window count in
  // the page's query would read every matching row.
  return fetchPageOfKnownTotal(query.orderBy(orderByExpression(sort)), paging, countRows(db, query))
}

/** A sync page of the organization's live patients matching the filters, with tombstones. */
export async function syncPatients(db: Db, organizationId: number, filters: PatientFilters, read: SyncRead) {
  const [rows, tombstones] = await Promise.all([
    syncRows(filteredPatients(db, organizationId, filters), { time: 'updated_at', id: 'id' }, read),
    syncTombstones(db, { organizationId, resourceType: 'patient' }, read),
  ])
  return { rows, tombstones }
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

// Up to this many matches, a search page is sorted from the matches found first; beyond it,
// matches are dense enough that walking the sort order meets a page of them soon.
const FEW_MATCHES = 5000

/**
 * Live patients with a name word beginning with `first` and, if given, another beginning with
 * `second`. A word equal to `first` is one seek; words extending it are a range of their own, so
 * that a complete word never scans the longer words that begin with it.
 */
function patientsWithNameWords(db: Db, organizationId: number, first: string, second?: string) {
  const entries = () => {
    const query = db
      .selectFrom('patient_name_words')
      .select('patient_id')
      .where('organization_id', '=', organizationId)
    if (second === undefined) return query.where('next_word', '=', '')
    const end = prefixEnd(second)
    const from = query.where('next_word', '>=', second)
    return end === undefined ? from : from.where('next_word', '<', end)
  }
  const equal = entries().where('word', '=', first)
  const firstEnd = prefixEnd(first)
  const longer = entries().where('word', '>', first)
  return equal.union(firstEnd === undefined ? longer : longer.where('word', '<', firstEnd))
}

/**
 * Two name words seek the pair index (patient_name_words) and any further terms filter those
 * patients; without name words the terms are found in the search text through its trigram index.
 * Filters (the patient picker's birth date and MRN) are exact, as the list's. The count comes first
 * and decides the plan: left to itself, the planner may walk the whole name index looking for a
 * handful of matches (BENCHMARKS.md, "GET /api/patients/search?q=").
 */
export async function searchPatients(
  db: Db,
  organizationId: number,
  { nameWords, texts }: SearchTerms,
  sort: SortOrder,
  { page, size }: PageQuery,
  filters: PatientFilters = {},
) {
  const filtered = Object.values(filters).some((value) => value !== undefined)
  if (nameWords.length === 0 && texts.length === 0 && !filtered) return { rows: [], total: 0 }
  const [first, second, ...others] = nameWords
  const candidates =
    first === undefined ? undefined : patientsWithNameWords(db, organizationId, first, second)
  let matching = filteredPatients(db, organizationId, filters)
  if (candidates) matching = matching.where('id', 'in', candidates)
  for (const word of others) {
    matching = matching.where(
      sql<boolean>`exists (select from unnest(patient_name_words(first_name, middle_name, last_name)) as word
        where starts_with(word, ${word}))`,
    )
  }
  for (const text of texts) matching = matching.where('search_text', 'like', `%${escapeLike(text)}%`)
  const total =
    candidates && others.length === 0 && texts.length === 0 && !filtered
      ? await countRows(db, db.selectFrom(candidates.as('candidates')).select('patient_id'))
      : await countRows(db, matching)
  if (page * size >= total) return { rows: [], total }
  const offset = page * size
  if (total > FEW_MATCHES) {
    return {
      rows: await matching.orderBy(orderByExpression(sort)).limit(size).offset(offset).execute(),
      total,
    }
  }
  const rows = await db
    .with(
      (cte) => cte('matches').materialized(),
      () => matching,
    )
    .selectFrom('matches')
    .selectAll()
    .orderBy(orderByExpression(sort))
    .limit(size)
    .offset(offset)
    .execute()
  return { rows, total }
}
