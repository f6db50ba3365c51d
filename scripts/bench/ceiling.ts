import Fastify from 'fastify'
import pg from 'pg'
import { SORTED_PAGE_SIZE, SORTED_PAGE_SQL, SORTED_PAGE_TOTAL_SQL } from './ceiling-statements.js'

/**
 * The ceilings the service is measured against, each a bare Fastify route (no auth, envelope,
 * audit, metrics or validation) on Fastify and pg alone, importing none of the service's code, so
 * that a ceiling measures what the database and the libraries can do: `constant` returns a fixed
 * object; `select` runs a primary-key SELECT of a patient; `select-coalesced` runs the same lookups
 * gathered per event-loop turn into one SELECT, as the service gathers its lookups, so that the
 * service's ratio to it is what the rest of its work costs; `insert` runs an INSERT of a patient in
 * a transaction; `sorted-page` runs the two statements of the service's first page of patients
 * sorted by last name (ceiling-statements.ts) and answers the rows and the total.
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
  const lookup = coalescedLookup(async (ids) => {
    const result = await pool.query({
      name: 'patients_by_ids',
      text: 'select * from patients where id = any($1) and deleted_at is null',
      values: [ids],
    })
    return new Map(result.rows.map((row) => [row.id as number, row]))
  })
  app.get<{ Params: { id: string } }>(
    '/patients/:id',
    async (request) => (await lookup(Number(request.params.id))) ?? {},
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
  const organization = Number(organizationId)
  app.get('/patients', async () => {
    const [rows, count] = await Promise.all([
      pool.query({ name: 'sorted_page', text: SORTED_PAGE_SQL, values: [organization, SORTED_PAGE_SIZE, 0] }),
      pool.query({ name: 'sorted_page_total', text: SORTED_PAGE_TOTAL_SQL, values: [organization] }),
    ])
    return { rows: rows.rows, total: count.rows[0]?.total }
  })
} else {
  throw new Error(`unknown ceiling ${kind}`)
}

/**
 * Lookups by id asked for in the same turn of the event loop, answered by one call of `fetchMany`
 * once the turn's other work is done, as the service gathers its lookups by id.
 */
function coalescedLookup<V>(fetchMany: (ids: number[]) => Promise<Map<number, V>>) {
  type Waiter = { resolve: (value: V | undefined) => void; reject: (error: unknown) => void }
  let asked: Map<number, Waiter[]> | undefined
  const answer = async (waiting: Map<number, Waiter[]>) => {
    try {
      const found = await fetchMany([...waiting.keys()])
      for (const [id, waiters] of waiting) for (const waiter of waiters) waiter.resolve(found.get(id))
    } catch (error) {
      for (const waiters of waiting.values()) for (const waiter of waiters) waiter.reject(error)
    }
  }
  return (id: number) =>
    new Promise<V | undefined>((resolve, reject) => {
      if (!asked) {
        const waiting = new Map<number, Waiter[]>()
        asked = waiting
        setImmediate(() => {
          asked = undefined
          void answer(waiting)
        })
      }
      const waiters = asked.get(id)
      if (waiters) waiters.push({ resolve, reject })
      else asked.set(id, [{ resolve, reject }])
    })
}

await app.listen({ port: Number(port), host: '127.0.0.1' })
process.stdout.write('ready\n')
