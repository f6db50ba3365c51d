import { cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { Agent, request } from 'undici'
import { EVENT_NAMES } from '../../schemas/events.js'
import { readFeedRows } from '../../src/modules/events/queries.js'
import { benchApp, benchCaller } from '../lib/bench-app.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'

// Measures how fast a client reads the change feed (GET /api/events) over HTTP: N events of one
// organization are written straight into the outbox, in transactions of `batch` events, then read
// from the beginning in pages of `limit` until caught up. The whole run is bounded (--seconds).
// `npm run bench:change-feed -- --n 100000`; DATABASE_URL selects a PostgreSQL server (the run
// creates a database of its own there and drops it at the end), else in-memory PGlite.

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '1000' },
    limit: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '110' },
  },
})
const N = Math.min(Number(values.n), 1_000_000)
const BATCH = Math.max(1, Number(values.batch))
const LIMIT = Number(values.limit)
const deadline = Date.now() + Number(values.seconds) * 1000
const databaseUrl = process.env.DATABASE_URL

function checkTime(what: string): void {
  if (Date.now() > deadline) throw new Error(`out of time (--seconds ${values.seconds}) while ${what}`)
}

async function main(): Promise<void> {
  const { app, kind, close } = await benchApp(databaseUrl, 'ehr_bench_change_feed')
  const base = await app.listen({ host: '127.0.0.1', port: 0 })
  const client = new Agent({ connections: 1 })
  try {
    const { organization, headers } = await benchCaller(app, ['ADMIN'])

    // Seed: patient.created bodies as the outbox writes them, one transaction per batch.
    const seedStarted = performance.now()
    for (let from = 0; from < N; from += BATCH) {
      checkTime('seeding')
      const count = Math.min(BATCH, N - from)
      await sql`
        insert into outbox_events (organization_id, event_type, payload)
        select ${organization.id}, 'patient.created', jsonb_build_object(
          'event', 'patient.created',
          'timestamp', to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'data', jsonb_build_object('id', ${from} + g, 'mrn', 'MRN' || lpad((${from} + g)::text, 8, '0'),
            'status', 'ACTIVE', 'deleted', false))
        from generate_series(1, ${count}::int) g
      `.execute(app.db)
    }
    const seedSeconds = (performance.now() - seedStarted) / 1000

    // Read: the whole feed from the beginning, one page after another, as a follower catching up.
    const readStarted = performance.now()
    let position: string | undefined
    let read = 0
    let pages = 0
    let bytes = 0
    let caughtUp = false
    while (!caughtUp) {
      checkTime('reading')
      const query = new URLSearchParams({ limit: String(LIMIT), ...(position ? { after: position } : {}) })
      const response = await request(`${base}/api/events?${query}`, {
        dispatcher: client,
        headers,
      })
      const text = await response.body.text()
      if (response.statusCode !== 200) throw new Error(`GET /api/events: ${response.statusCode} ${text}`)
      bytes += text.length
      pages += 1
      const { data } = JSON.parse(text) as {
        data: { events: unknown[]; position: string; caughtUp: boolean }
      }
      read += data.events.length
      position = data.position
      caughtUp = data.caughtUp
    }
    const readSeconds = (performance.now() - readStarted) / 1000
    if (read !== N) throw new Error(`read ${read} events, expected ${N}`)

    // Ceiling: the feed's own query, page after page in-process: the database's share of the work,
    // without HTTP, authentication or the envelope.
    const ceilingStarted = performance.now()
    let after = { transactionId: '0', eventId: '0' }
    for (let fetched = 0; fetched < N; ) {
      checkTime('reading the ceiling')
      const { rows } = await app.db
        .transaction()
        .setAccessMode('read only')
        .execute((trx) => readFeedRows(trx, organization.id, after, EVENT_NAMES, LIMIT))
      const tail = rows.at(-1)
      if (!tail) break
      fetched += rows.length
      after = { transactionId: tail.transaction_id, eventId: tail.id }
    }
    const ceilingRate = N / ((performance.now() - ceilingStarted) / 1000)
    const rate = read / readSeconds

    const heading = `Change feed: ${kind}`
    const lines = [
      `## ${heading}`,
      '',
      `\`npm run bench:change-feed -- --n ${N} --limit ${LIMIT}\` — ${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, Node ${process.version}.`,
      '',
      '| measure | value | ceiling in the same run | ratio |',
      '|---|---|---|---|',
      `| events seeded (SQL, ${BATCH} per transaction) | ${N} in ${seedSeconds.toFixed(1)} s | | |`,
      `| read over HTTP, pages of ${LIMIT} | ${pages} pages in ${readSeconds.toFixed(2)} s | | |`,
      `| read rate | ${rate.toFixed(0)} events/s | ${ceilingRate.toFixed(0)} events/s: the feed's query alone, in-process | ${Math.round((100 * rate) / ceilingRate)}% |`,
      `| per page | ${((1000 * readSeconds) / pages).toFixed(1)} ms, ${(bytes / pages / 1024).toFixed(0)} KiB | | |`,
    ]
    process.stdout.write(`${lines.join('\n')}\n`)
    await writeBenchmarkSection(heading, lines.join('\n'))
  } finally {
    await client.close()
    await close()
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`)
  process.exitCode = 1
})
