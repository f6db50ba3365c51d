/**
 * The patients area's fast path: the reads and the write that carry most of the service's load,
 * made cheaper than plain Kysely queries can be. It serves the rows "GET /api/patients/{id}" (and
 * "GET /fhir/R4/Patient/{id}", which reads the patient the same way), "GET /api/patients (sorted
 * page)" and "POST /api/patients" of BENCHMARKS.md, where building and compiling a query on every
 * call cost about as much as running it (docs/scaling.md):
 * - a query compiled once per shape, each call only filling in its values (precompiledQuery), and
 *   declared a prepared statement (db/prepared-statements.ts), its plan suiting every value;
 * - lookups by id outside a transaction made in the same event-loop turn answered by one query;
 * - the list as a practice opens it (no filter but perhaps the status) compiled once per sort order
 *   and status filter, with its total from the maintained counts.
 * Other areas copy queries.ts, which stays plain, and not this module.
 */
import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import { precompiledQuery } from '../../../db/precompiled-query.js'
import { prepared } from '../../../db/prepared-statements.js'
import type { NewPatientRow, PatientRow } from '../../../db/tables/patients.js'
import type { PageQuery } from '../../../schemas/common.js'
import type { ChangeAuditFields } from '../../audit/change-audit.js'
import { orderByExpression, type SortOrder } from '../../lib/paging.js'
import { changeWithEventStatement } from '../../outbox/enqueue.js'
import { coalesced } from '../../runtime/coalesce.js'
import { patientEvent } from './mapper.js'
import {
  insertPatientQuery,
  listPatients as listMatchingPatients,
  live,
  PATIENT_COLUMNS,
  type PatientFilters,
} from './queries.js'

const patientsByIds = precompiledQuery((db, organizationId: number, ids: number[]) =>
  prepared(
    live(db, organizationId)
      .select(PATIENT_COLUMNS)
      .where('id', '=', (eb) => eb.fn.any(eb.val(ids))),
  ),
)

const lookups = new WeakMap<Db, (organizationId: number, id: number) => Promise<PatientRow | undefined>>()

function coalescedLookup(db: Db) {
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

/**
 * The organization's live patient with this id. Outside a transaction every lookup of the same
 * event-loop turn goes into one query; inside one, a single id.
 */
export async function findPatient(
  db: Db,
  organizationId: number,
  id: number,
): Promise<PatientRow | undefined> {
  if (!db.isTransaction) return coalescedLookup(db)(organizationId, id)
  const [row] = await patientsByIds(db, organizationId, [id])
  return row
}

// The sort comes from PATIENT_SORT_COLUMNS, so there are at most a few dozen opening pages. Being
// prepared is safe here: with no filter on skewed values, any plan PostgreSQL settles on either
// walks the sort's index or sorts the organization's rows, as the plan made for the values would.
type PageQueryFn = (
  db: Db,
  organizationId: number,
  size: number,
  offset: number,
  status?: string,
) => Promise<PatientRow[]>
const openingPages = new Map<string, PageQueryFn>()

function openingPage(sort: SortOrder, byStatus: boolean): PageQueryFn {
  const key = `${sort.column} ${sort.direction}${byStatus ? ' by status' : ''}`
  let page = openingPages.get(key)
  if (!page) {
    page = precompiledQuery((db, organizationId: number, size: number, offset: number, status?: string) => {
      const query = live(db, organizationId).select(PATIENT_COLUMNS)
      return prepared(
        (byStatus ? query.where('status', '=', status as PatientRow['status']) : query)
          .orderBy(orderByExpression(sort))
          .limit(size)
          .offset(offset),
      )
    })
    openingPages.set(key, page)
  }
  return page
}

const liveCount = (db: Db, organizationId: number) =>
  db
    .selectFrom('patient_counts')
    .select(sql<number>`coalesce(sum(live_count), 0)::int`.as('total'))
    .where('organization_id', '=', organizationId)
const allLiveCount = precompiledQuery((db, organizationId: number) => prepared(liveCount(db, organizationId)))
const liveCountOfStatus = precompiledQuery((db, organizationId: number, status: string) =>
  prepared(liveCount(db, organizationId).where('status', '=', status)),
)

/** The maintained count of an organization's live patients (of one status, if given). */
async function countLivePatients(db: Db, organizationId: number, status?: string): Promise<number> {
  const [row] = await (status === undefined
    ? allLiveCount(db, organizationId)
    : liveCountOfStatus(db, organizationId, status))
  return Number(row?.total ?? 0)
}

/**
 * A page of the organization's live patients matching the filters: the list as a practice opens it
 * (no filter but perhaps the status) compiled once, any other through queries.ts.
 */
export async function listPatients(
  db: Db,
  organizationId: number,
  filters: PatientFilters,
  sort: SortOrder,
  paging: PageQuery,
) {
  const onlyByStatus = Object.entries(filters).every(
    ([name, value]) => name === 'status' || value === undefined,
  )
  if (!onlyByStatus) return listMatchingPatients(db, organizationId, filters, sort, paging)
  const page = openingPage(sort, filters.status !== undefined)
  const [rows, total] = await Promise.all([
    page(db, organizationId, paging.size, paging.page * paging.size, filters.status),
    countLivePatients(db, organizationId, filters.status),
  ])
  return { rows, total }
}

/**
 * The INSERT of a patient with its event in one statement, compiled once per set of columns
 * (whether the MRN and status are given): no transaction, one round trip per attempt. The audit
 * record's fields are a record argument like the row (empty outside an audited call), so the
 * statement is compiled with its audit insert or without.
 */
export const insertPatientWithEvent = precompiledQuery(
  (db, organizationId: number, timestamp: string, row: NewPatientRow, audit: Partial<ChangeAuditFields>) => {
    const statement = changeWithEventStatement(
      organizationId,
      'patient.created',
      insertPatientQuery(db, row),
      patientEvent.toSql,
      timestamp,
      'request_id' in audit ? (audit as ChangeAuditFields) : undefined,
    )
    return { compile: () => statement.compile(db) }
  },
)
