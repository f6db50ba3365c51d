import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrateToLatest } from '../../db/migrator.js'
import { openPostgres } from '../../db/postgres.js'
import { type ReplicaCluster, startReplicaCluster } from '../../scripts/lib/replica-cluster.js'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { exported, exportedResources } from '../helpers/bulk-export.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../helpers/factories.js'

// A primary and a streaming replica of their own (PostgreSQL's initdb, pg_basebackup, pg_ctl), with
// the service reading lists from the replica. Nothing here touches the shared test server.
const MAX_LAG_MS = 2000

let cluster: ReplicaCluster
let app: App
let writer: TestUser
let reader: TestUser

beforeAll(async () => {
  cluster = await startReplicaCluster()
  const migrations = openPostgres({ url: cluster.primaryUrl, poolMax: 1, statementTimeoutMs: 0 })
  await migrateToLatest(migrations.db).finally(() => migrations.close())
  await cluster.waitForCatchUp()
  app = await buildTestApp(
    {
      DATABASE_URL: cluster.primaryUrl,
      DATABASE_READ_URLS: cluster.replicaUrl,
      DATABASE_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
      DATABASE_REPLICA_CHECK_INTERVAL_MS: '100',
      MAIL_TRANSPORT: 'log',
    },
    undefined,
    { database: openPostgres({ url: cluster.primaryUrl, poolMax: 10 }) },
  )
  const organization = await newOrganization(app)
  // One token each, so each caller keeps one session (a test user's `token` is a new one per read).
  writer = { ...(await organization.user('NURSE')) }
  reader = { ...(await organization.user('NURSE')) }
  await inRotation()
}, 120_000)

afterAll(async () => {
  await app?.close()
  await cluster?.destroy()
}, 60_000)

const replicaState = () => app.readReplicas?.statuses()[0]?.state

/** Waits (bounded) until the replica's state is `state`. */
async function replicaBecomes(state: 'UP' | 'LAGGING' | 'DOWN', timeoutMs = 15_000) {
  const until = Date.now() + timeoutMs
  while (replicaState() !== state) {
    if (Date.now() > until) throw new Error(`the replica stayed ${replicaState()}, not ${state}`)
    await sleep(50)
  }
}

async function inRotation() {
  await cluster.waitForCatchUp()
  await replicaBecomes('UP')
}

async function createPatient(user: TestUser, lastName: string) {
  const response = await app.inject({
    method: 'POST',
    url: '/api/patients',
    headers: bearer(user.token),
    payload: patientBody({ identification: { ...patientBody().identification, lastName } }),
  })
  expect(response.statusCode).toBe(201)
  return response
}

/** The ids `user` finds listing patients of that last name; `headers` adds to the request. */
async function listed(user: TestUser, lastName: string, headers: Record<string, string> = {}) {
  const response = await app.inject({
    url: `/api/patients?lastName=${lastName}`,
    headers: { ...bearer(user.token), ...headers },
  })
  expect(response.statusCode).toBe(200)
  return (response.json().data.content as { id: number }[]).map(({ id }) => id)
}

describe('reads from a streaming replica', () => {
  it('lists from the replica, while the caller who wrote reads its own write at once', async () => {
    await cluster.pauseReplay()
    try {
      const created = await createPatient(writer, 'Replayfirst')
      const id = created.json().data.id
      const position = created.headers['x-write-position']
      expect(position).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/)

      // The writer's read goes to the primary: the replica has not replayed the write.
      expect(await listed(writer, 'Replayfirst')).toEqual([id])
      // Another caller reads the replica, paused before the write (and still within the lag limit).
      expect(await listed(reader, 'Replayfirst')).toEqual([])
      expect(replicaState()).toBe('UP')
      // Any caller who sends the position back reads at least that far, on any instance.
      expect(await listed(reader, 'Replayfirst', { 'x-read-after': String(position) })).toEqual([id])
    } finally {
      await cluster.resumeReplay()
    }
    await inRotation()
    expect((await listed(reader, 'Replayfirst')).length).toBe(1)
  })

  it('takes a replica that lags past the limit out of rotation, and back once it has caught up', async () => {
    await cluster.pauseReplay()
    try {
      const id = (await createPatient(writer, 'Lagging')).json().data.id
      await replicaBecomes('LAGGING')
      // Out of rotation: every caller reads the primary.
      expect(await listed(reader, 'Lagging')).toEqual([id])
      const health = (await app.inject({ url: '/actuator/health' })).json()
      expect(health.status).toBe('UP')
      expect(health.components.replicas.status).toBe('DOWN')
      expect(Object.values(health.components.replicas.details)).toEqual([expect.stringMatching(/^LAGGING, /)])
      const metrics = (await app.inject({ url: '/actuator/prometheus' })).body
      expect(metrics).toMatch(/ehr_db_replica_in_rotation\{replica="127\.0\.0\.1:\d+"\} 0/)
      expect(metrics).toMatch(/ehr_db_replica_lag_seconds\{replica="127\.0\.0\.1:\d+"\} [1-9]/)
    } finally {
      await cluster.resumeReplay()
    }
    await inRotation()
    const metrics = (await app.inject({ url: '/actuator/prometheus' })).body
    expect(metrics).toMatch(/ehr_db_replica_in_rotation\{replica="127\.0\.0\.1:\d+"\} 1/)
  })

  it('reads the primary while the replica is stopped, and the replica again once it is back', async () => {
    const id = (await createPatient(writer, 'Stopped')).json().data.id
    await cluster.stopReplica()
    try {
      await replicaBecomes('DOWN')
      for (let i = 0; i < 5; i++) expect(await listed(reader, 'Stopped')).toEqual([id])
      const health = (await app.inject({ url: '/actuator/health' })).json()
      expect(health.status).toBe('UP')
      expect(Object.values(health.components.replicas.details)).toEqual([expect.stringMatching(/^DOWN, /)])
    } finally {
      await cluster.startReplica()
    }
    await inRotation()
    expect(await listed(reader, 'Stopped')).toEqual([id])
  }, 60_000)

  it('gives every caller its own writes back under load', async () => {
    const organization = await newOrganization(app)
    const callers = await Promise.all(
      Array.from({ length: 8 }, async () => ({ ...(await organization.user('NURSE')) })),
    )
    const seen = await Promise.all(
      callers.map(async (caller, index) => {
        let found = 0
        for (let round = 0; round < 10; round++) {
          const lastName = `Load${index}x${round}`
          const id = (await createPatient(caller, lastName)).json().data.id
          if ((await listed(caller, lastName)).includes(id)) found++
        }
        return found
      }),
    )
    expect(seen).toEqual(callers.map(() => 10))
  }, 60_000)

  it('exports from the replica once it has replayed all before the transactionTime, else from the primary', async () => {
    const organization = await newOrganization(app)
    const doctor = { ...(await organization.user('ADMIN', 'PROVIDER')) }
    const exportedIds = async () => {
      const { manifest } = await exported(app, doctor, '/Patient/$export')
      return ((await exportedResources(app, doctor, manifest)).get('Patient') ?? []).map(({ id }) =>
        Number(id),
      )
    }
    await cluster.pauseReplay()
    try {
      const id = (await createPatient(doctor, 'Exportedfirst')).json().data.id
      // The replica has not replayed the patient: the export reads the primary, and misses nothing.
      expect(await exportedIds()).toEqual([id])
    } finally {
      await cluster.resumeReplay()
    }
    await inRotation()
    // Caught up: the export reads the replica, whose own statistics count the reads.
    const before = await replicaPatientScans()
    expect((await exportedIds()).length).toBe(1)
    await expect.poll(replicaPatientScans, { timeout: 20_000, interval: 250 }).toBeGreaterThan(before)
  }, 60_000)
})

/** Scans of the patients table the replica has served (its statistics reach the view within seconds). */
async function replicaPatientScans(): Promise<number> {
  const client = new pg.Client({ connectionString: cluster.replicaUrl })
  await client.connect()
  try {
    const { rows } = await client.query<{ scans: string }>(
      `select coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) as scans from pg_stat_user_tables
       where relname = 'patients'`,
    )
    return Number(rows[0]?.scans ?? 0)
  } finally {
    await client.end()
  }
}
