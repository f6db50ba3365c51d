import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { type ReplicaCluster, startReplicaCluster } from '../../scripts/lib/replica-cluster.js'

let cluster: ReplicaCluster

beforeAll(async () => {
  cluster = await startReplicaCluster()
  await query(cluster.primaryUrl, 'create table replicated (token text primary key)')
}, 90_000)
afterAll(async () => {
  await cluster?.destroy()
}, 90_000)

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 5_000,
    query_timeout: 5_000,
  })
  client.on('error', () => {})
  try {
    await client.connect()
    return (await client.query<T>(text, values)).rows
  } finally {
    await client.end().catch(() => {})
  }
}

/** The error code of a plain TCP connection to the port, or 'connected'. */
function tcpOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.setTimeout(5_000, () => {
      socket.destroy()
      resolve('timeout')
    })
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
}

const portOf = (url: string) => Number(new URL(url).port)
let counter = 0
const newToken = () => `token-${Date.now()}-${++counter}`

async function replicaHas(token: string): Promise<boolean> {
  const rows = await query(cluster.replicaUrl, 'select 1 from replicated where token = $1', [token])
  return rows.length > 0
}

describe('startReplicaCluster', () => {
  it('starts a primary and a replica in recovery that sees a primary write after waitForCatchUp', async () => {
    const [primary] = await query<{ recovery: boolean }>(
      cluster.primaryUrl,
      'select pg_is_in_recovery() as recovery',
    )
    const [replica] = await query<{ recovery: boolean }>(
      cluster.replicaUrl,
      'select pg_is_in_recovery() as recovery',
    )
    expect(primary?.recovery).toBe(false)
    expect(replica?.recovery).toBe(true)
    expect(portOf(cluster.replicaUrl)).not.toBe(portOf(cluster.primaryUrl))

    const token = newToken()
    await query(cluster.primaryUrl, 'insert into replicated values ($1)', [token])
    await cluster.waitForCatchUp()
    expect(await replicaHas(token)).toBe(true)
  })

  it('holds back a new write while replay is paused, and replays it after resume', async () => {
    onTestFinished(() => cluster.resumeReplay())
    await cluster.pauseReplay()
    const token = newToken()
    await query(cluster.primaryUrl, 'insert into replicated values ($1)', [token])
    const [primary] = await query<{ lsn: string }>(
      cluster.primaryUrl,
      'select pg_current_wal_lsn()::text as lsn',
    )

    // Received but not replayed: without this, a merely slow replica would pass the test.
    const received = Date.now() + 10_000
    for (;;) {
      const [row] = await query<{ received: boolean }>(
        cluster.replicaUrl,
        'select pg_last_wal_receive_lsn() >= $1::pg_lsn as received',
        [primary?.lsn],
      )
      if (row?.received) break
      expect(Date.now(), 'the replica did not receive the WAL').toBeLessThan(received)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(await replicaHas(token)).toBe(false)
    const [replay] = await query<{ behind: boolean; state: string }>(
      cluster.replicaUrl,
      `select pg_last_wal_replay_lsn() < $1::pg_lsn as behind, pg_get_wal_replay_pause_state() as state`,
      [primary?.lsn],
    )
    expect(replay).toEqual({ behind: true, state: 'paused' })
    await expect(cluster.waitForCatchUp(1_000)).rejects.toThrow(/did not replay/)

    await cluster.resumeReplay()
    await cluster.waitForCatchUp()
    expect(await replicaHas(token)).toBe(true)
    const [caughtUp] = await query<{ behind: boolean }>(
      cluster.replicaUrl,
      'select pg_last_wal_replay_lsn() < $1::pg_lsn as behind',
      [primary?.lsn],
    )
    expect(caughtUp?.behind).toBe(false)
  })

  it('refuses connections to a stopped replica, and serves again, caught up, once restarted', async () => {
    await cluster.stopReplica()
    const started = Date.now()
    await expect(query(cluster.replicaUrl, 'select 1')).rejects.toMatchObject({ code: 'ECONNREFUSED' })
    expect(Date.now() - started).toBeLessThan(1_000)

    const token = newToken()
    await query(cluster.primaryUrl, 'insert into replicated values ($1)', [token])
    await cluster.startReplica()
    const [replica] = await query<{ recovery: boolean }>(
      cluster.replicaUrl,
      'select pg_is_in_recovery() as recovery',
    )
    expect(replica?.recovery).toBe(true)
    await cluster.waitForCatchUp()
    expect(await replicaHas(token)).toBe(true)
  })

  // Last: it takes the file's cluster down (afterAll's destroy() is then a no-op).
  it('destroy stops both servers and removes the temp dir, and is safe to call twice', async () => {
    expect(existsSync(cluster.directory)).toBe(true)
    expect(await tcpOutcome(portOf(cluster.primaryUrl))).toBe('connected')
    expect(await tcpOutcome(portOf(cluster.replicaUrl))).toBe('connected')

    await cluster.destroy()
    expect(existsSync(cluster.directory)).toBe(false)
    expect(await tcpOutcome(portOf(cluster.primaryUrl))).toBe('ECONNREFUSED')
    expect(await tcpOutcome(portOf(cluster.replicaUrl))).toBe('ECONNREFUSED')
    await expect(cluster.destroy()).resolves.toBeUndefined()
  })
})
