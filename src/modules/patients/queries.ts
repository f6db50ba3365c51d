import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely'
import type { Database } from '../../../db/database.js'
import { precompiledQuery } from '../../../db/precompiled-query.js'
import type { NewPatientRow, PatientRow, PatientRowUpdate } from '../../../db/tables/patients.js'
import type { PageQuery } from '../../../schemas/common.js'
import type { PATIENT_SORT_FIELDS } from '../../../schemas/patients.js'
import { coalesced } from '../../lib/coalesce.js'
import { countRows, fetchPageOfKnownTotal, type SortOrder } from '../../lib/paging.js'

type Db = Kysely<Database> | Transaction<Database>

export type PatientSortField = (typeof PATIENT_SORT_FIELDS)[number]

/** Sort expressions; names sort case-insensitively, matching the (organization_id, lower(last_name)) index. */
export const PATIENT_SORT_COLUMNS: Record<PatientSortField, string> = {
  lastName: 'lower(last_name)',
  firstName: 'lower(first_name)',
  dateOfBirth: 'date_of_birth',
  mrn: 'mrn',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
}

export interface PatientFilters {
  status?: string
  firstName?: string
  lastName?: string
  dateOfBirth?: string
  gender?: string
  email?: string
  mrn?: string
}

const PATIENT_COLUMNS = [
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
  'created_by',
  'updated_by',
  'created_at',
  'updated_at',
  'deleted_at',
  'deleted_by',
] as const satisfies readonly (keyof PatientRow)[]

const live = (db: Db, organizationId: number) =>
  db.selectFrom('patients').where('organization_id', '=', organizationId).where('deleted_at', 'is', null)

/** The INSERT of a patient, which returns no row when the MRN is taken in the organization. */
export function insertPatientQuery(db: Db, row: NewPatientRow) {
  return db
    .insertInto('patients')
    .values(row)
    .onConflict((conflict) => conflict.constraint('patients_organization_mrn_key').doNothing())
    .returning(PATIENT_COLUMNS)
}

// The busiest read of the service, hence compiled once. Outside a transaction every lookup of the
// same event-loop turn goes into one call (coalesced); inside one, a single id.
const patientsByIds = precompiledQuery((db, organizationId: number, ids: number[]) =>
  live(db, organizationId)
    .select(PATIENT_COLUMNS)
    .where('id', '=', (eb) => eb.fn.any(eb.val(ids))),
)

const lookups = new WeakMap<
  Kysely<Database>,
  (organizationId: number, id: number) => Promise<PatientRow | undefined>
>()

function coalescedLookup(db: Kysely<Database>) {
  let lookup = lookups.get(db)
  if (!lookup) {
    lookup = coalesced(async (organizationId: number, ids: number[]) => {
      const rows = await patientsByIds(db, organizationId, ids)
      return new Map(rows.map((row) => [row.id, row]))
    })
    lookups.set(db, lookup)
  }
  return lookup
}

export async function findPatient(
  db: Db,
  organizationId: number,
  id: number,
): Promise<PatientRow | undefined> {
  if (!db.isTransaction) return coalescedLookup(db)(organizationId, id)
  const [row] = await patientsByIds(db, organizationId, [id])
  return row
}

/**
 * The organization of a live patient, whatever the caller's: the one query that crosses tenants,
 * used only to tell "not yours" (403) from "does not exist" (404). It returns no patient data.
 */
export async function findPatientOrganization(db: Db, id: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('patients')
    .select('organization_id')
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst()
  return row?.organization_id
}

export function lockPatient(trx: Transaction<Database>, organizationId: number, id: number) {
  return live(trx, organizationId).select(PATIENT_COLUMNS).where('id', '=', id).forUpdate().executeTakeFirst()
}

export function updatePatientQuery(
  trx: Transaction<Database>,
  organizationId: number,
  id: number,
  changes: PatientRowUpdate,
) {
  return trx
    .updateTable('patients')
    .set({ ...changes, updated_at: sql`now()` })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returning(PATIENT_COLUMNS)
}

const orderBy = (sort: SortOrder): RawBuilder<unknown> =>
  sql.raw(`${sort.column} ${sort.direction}, id ${sort.direction}`)

export function listPatients(
  db: Kysely<Database>,
  organizationId: number,
  filters: PatientFilters,
  sort: SortOrder,
  paging: PageQuery,
) {
  let query = live(db, organizationId).select(PATIENT_COLUMNS)
  if (filters.status) query = query.where('status', '=', filters.status)
  if (filters.gender) query = query.where('gender', '=', filters.gender)
  if (filters.dateOfBirth) query = query.where('date_of_birth', '=', filters.dateOfBirth)
  if (filters.mrn) query = query.where('mrn', '=', filters.mrn)
  if (filters.firstName) query = query.where(sql`lower(first_name)`, '=', filters.firstName.toLowerCase())
  if (filters.lastName) query = query.where(sql`lower(last_name)`, '=', filters.lastName.toLowerCase())
  if (filters.email) query = query.where(sql`lower(email)`, '=', filters.email.toLowerCase())
  const ordered = query.orderBy(orderBy(sort))
  const onlyByStatus = Object.entries(filters).every(
    ([name, value]) => name === 'status' || value === undefined,
  )
  // The total is counted apart from the page (for other filters through their index alone): a
  // window count in the page's query would read every matching row.
  const total = onlyByStatus ? countLivePatients(db, organizationId, filters.status) : countRows(db, query)
  return fetchPageOfKnownTotal(ordered, paging, total)
}

/** The maintained count of an organization's live patients (of one status, if given). */
async function countLivePatients(
  db: Kysely<Database>,
  organizationId: number,
  status?: string,
): Promise<number> {
  let query = db
    .selectFrom('patient_counts')
    .select(sql<number>`coalesce(sum(live_count), 0)::int`.as('total'))
    .where('organization_id', '=', organizationId)
  if (status) query = query.where('status', '=', status)
  const row = await query.executeTakeFirstOrThrow()
  return Number(row.total)
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

// Up to this many matches, a search page is sorted from the matches the trigram index finds;
// beyond it, matches are dense enough that walking the sort order meets a page of them soon.
const FEW_MATCHES = 5000

/**
 * Every term must occur in the patient's search text (names, e-mail, MRN, phone digits). The count
 * comes first and decides the plan: left to itself, the planner may walk the whole name index
 * looking for a handful of matches (seconds on a million patients).
 */
export async function searchPatients(
  db: Kysely<Database>,
  organizationId: number,
  terms: string[],
  sort: SortOrder,
  { page, size }: PageQuery,
) {
  let matching = live(db, organizationId).select(PATIENT_COLUMNS)
  for (const term of terms) matching = matching.where('search_text', 'like', `%${escapeLike(term)}%`)
  const total = await countRows(db, matching)
  if (page * size >= total) return { rows: [], total }
  const offset = page * size
  if (total > FEW_MATCHES) {
    return { rows: await matching.orderBy(orderBy(sort)).limit(size).offset(offset).execute(), total }
  }
  const rows = await db
    .with(
      (cte) => cte('matches').materialized(),
      () => matching,
    )
    .selectFrom('matches')
    .selectAll()
    .orderBy(orderBy(sort))
    .limit(size)
    .offset(offset)
    .execute()
  return { rows, total }
}
