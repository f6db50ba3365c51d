import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { postgresCpuMs, processCpuMs } from '../../scripts/bench/cpu.js'

// The benchmark counts PostgreSQL's CPU time when the server runs on the same machine, as the one
// TEST_DATABASE_URL names does here (.ci/run starts it).
describe("the benchmark's PostgreSQL CPU time (scripts/bench/cpu.ts)", () => {
  it('keeps the share of a backend that did its work and ended between two readings', async () => {
    const before = postgresCpuMs()
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL })
    await client.connect()
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid')
    await client.query('select count(*) from generate_series(1, 5000000)')
    const backend = processCpuMs(rows[0]?.pid as number)
    // The backend ends with its connection; only the postmaster's count of ended children keeps its time.
    await client.end()
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(backend).toBeGreaterThan(100)
    expect(postgresCpuMs() - before).toBeGreaterThanOrEqual(backend)
  })
})
