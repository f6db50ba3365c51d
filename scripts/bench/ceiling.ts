import Fastify from 'fastify'
import { type CompiledQuery, Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import type { Database } from '../../db/database.js'
import { coalesced } from '../../src/lib/coalesce.js'
import { sortOrder } from '../../src/lib/paging.js'
import { listPatients, PATIENT_SORT_COLUMNS } from '../../src/modules/patients/queries.js'

/**
 * The ceilings the service is measured against, each a bare Fastify route (no auth, envelope,
 * audit, metrics or validation): `constant` returns a fixed object; `select` runs the service's
 * primary-key SELECT of a patient with pg; `select-coalesced` runs the same lookups coalesced per
 * event-loop turn into one SELECT, as the service does (src/lib/coalesce.ts), so that the service's
 * ratio to it is what the rest of its work costs; `insert` runs an INSERT of a patient in a transaction;
 * `sorted-page` runs the statements of the service's first page of patients sorted by last name,
 * taken from the service's own query code (run once through Kysely at start, its SQL and parameters
 * recorded), and answers the rows and the total.
 * Statements are named (prepared once per connection), as the service's are, so neither side gains by it.
 */
const [kind, port, databaseUrl, organizationId] = process.argv.slice(2)
const app = Fastify({ logger: false })
const pool = databaseUrl ? new pg.Pool({ connectionString: databaseUrl, max: 10 }) : undefined

if (kind === 'constant') {
  app.get('/', async () => ({ success: true, message: 'ok', data: { status: 'UP' } }))
} else if (kind === 'select' && pool) {
  app.get<{ Params: { id: string } }>('/patients/:id', async (request) => {
    const result = await pool.query({
      name: 'patient_by_id',
      text: 'select * from patients where id = $1 and deleted_at is null',
      values: [Number(request.params.id)],
    })
    return result.rows[0] ?? {}
  })
} else if (kind === 'select-coalesced' && pool) {
  const lookup = coalesced(async (_group: 'patients', ids: number[]) => {
    const result = await pool.query({
      name: 'patients_by_ids',
      text: 'select * from patients where id = any($1) and deleted_at is null',
      values: [ids],
    })
    return new Map(result.rows.map((row) => [row.id as number, row]))
  })
  app.get<{ Params: { id: string } }>(
    '/patients/:id',
    async (request) => (await lookup('patients', Number(request.params.id))) ?? {},
  )
} else if (kind === 'insert' && pool) {
  app.post<{ Body: { organizationId: number; userId: number } }>('/patients', async (request) => {
    const client = await pool.connect()
    try {
      await client.query('begin')
      const result = await client.query({
        name: 'insert_patient',
        text: `insert into patients (organization_id, first_name, last_name, date_of_birth, gender, email, created_by, updated_by)
         values ($1, 'Ceiling', 'Patient', '1980-01-01', 'Other', 'ceiling@example.test', $2, $2) returning *`,
        values: [request.body.organizationId, request.body.userId],
      })
      await client.query('commit')
      return result.rows[0]
    } catch (error) {
      await client.query('rollback')
      throw error
    } finally {
      client.release()
    }
  })
} else if (kind === 'sorted-page' && pool) {
  const [page, total] = await sortedPageStatements(pool, Number(organizationId))
  app.get('/patients', async () => {
    const [rows, count] = await Promise.all([
      pool.query({ name: 'sorted_page', text: page.sql, values: [...page.parameters] }),
      pool.query({ name: 'sorted_page_total', text: total.sql, values: [...total.parameters] }),
    ])
    return { rows: rows.rows, total: count.rows[0]?.total }
  })
} else {
  throw new Error(`unknown ceiling ${kind}`)
}

/** The page query and the count query of the service's first page of 20 patients by last name. */
async function sortedPageStatements(
  pool: pg.Pool,
  organizationId: number,
): Promise<[CompiledQuery, CompiledQuery]> {
  const recorded: CompiledQuery[] = []
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({ pool }),
    log: (event) => void recorded.push(event.query),
  })
  const sort = sortOrder('lastName,asc', PATIENT_SORT_COLUMNS, { field: 'lastName', direction: 'asc' })
  await listPatients(db, organizationId, {}, sort, { page: 0, size: 20 })
  if (recorded.length !== 2) throw new Error(`expected a page and a count query, saw ${recorded.length}`)
  const [first, second] = recorded as [CompiledQuery, CompiledQuery]
  return /order by/i.test(first.sql) ? [first, second] : [second, first]
}

await app.listen({ port: Number(port), host: '127.0.0.1' })
process.stdout.write('ready\n')
