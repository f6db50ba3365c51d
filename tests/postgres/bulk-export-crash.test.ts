import { tmpdir } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import type { App } from '../../src/app.js'
import { buildTestApp, newPostgresDatabase, TEST_ENCRYPTION_KEY } from '../helpers/app.js'
import { bearer, newOrganization, patientBody } from '../helpers/factories.js'
import { type RunningServer, startServer, stopServer } from '../helpers/servers/server-process.js'

let handle: DatabaseHandle
let databaseUrl: string
let app: App
const running: RunningServer[] = []

beforeAll(async () => {
  databaseUrl = await newPostgresDatabase()
  handle = openPostgres({ url: databaseUrl, poolMax: 10 })
  app = await buildTestApp({}, undefined, { database: handle })
})
afterAll(async () => {
  for (const server of running) await stopServer(server, 'SIGKILL')
  await app.close()
})

async function start(): Promise<RunningServer> {
  const server = await startServer({
    DATABASE_URL: databaseUrl,
    ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    // No mail server here; on PostgreSQL the service starts without one only when told so.
    MAIL_TRANSPORT: 'log',
    MIGRATE_ON_START: 'false',
    // The test app reads the files from the same place.
    DATA_DIR: tmpdir(),
    // Small files, so that the export is many files long when the process is killed.
    BULK_EXPORT_FILE_MAX_BYTES: '1024',
    // Short, so that the job the killed process held comes back quickly.
    BULK_EXPORT_LEASE_SECONDS: '2',
    OUTBOX_POLL_INTERVAL_MS: '200',
  })
  running.push(server)
  return server
}

async function until(check: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('a bulk export whose process is killed with SIGKILL', () => {
  it('finishes after a restart from its last finished file, with every resource exactly once', async () => {
    const org = await newOrganization(app)
    const doctor = await org.user('PROVIDER')
    const nurse = await org.user('NURSE')
    const patients: number[] = []
    for (let i = 0; i < 300; i++) {
      const response = await app.inject({
        method: 'POST',
        url: '/api/patients',
        headers: bearer(nurse.token),
        payload: patientBody(),
      })
      patients.push(response.json().data.id)
    }
    const started = await app.inject({
      url: '/fhir/R4/$export?_type=Patient',
      headers: { ...bearer(doctor.token), prefer: 'respond-async' },
    })
    expect(started.statusCode).toBe(202)
    const status = String(started.headers['content-location'])
    const id = status.split('/').at(-1) as string
    const files = async () =>
      Number(
        (
          await handle.db
            .selectFrom('bulk_export_files')
            .select((eb) => eb.fn.countAll().as('count'))
            .where('export_id', '=', id)
            .executeTakeFirstOrThrow()
        ).count,
      )

    const first = await start()
    await until(async () => (await files()) >= 3, 30_000)
    await stopServer(first, 'SIGKILL')
    const job = await handle.db
      .selectFrom('bulk_exports')
      .select(['status', 'lease_owner'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    expect(job).toMatchObject({ status: 'in-progress' })
    expect(job.lease_owner).not.toBeNull()

    const second = await start()
    await until(async () => {
      const row = await handle.db
        .selectFrom('bulk_exports')
        .select('status')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
      return row.status === 'completed'
    }, 120_000)
    expect(await stopServer(second)).toBe(0)

    const manifest = (
      await app.inject({ url: status.slice(status.indexOf('/fhir/R4')), headers: bearer(doctor.token) })
    ).json() as { output: { url: string; count: number }[] }
    const exported: number[] = []
    for (const file of manifest.output) {
      const body = (
        await app.inject({ url: file.url.slice(file.url.indexOf('/fhir/R4')), headers: bearer(doctor.token) })
      ).body
      const ids = body
        .split('\n')
        .filter(Boolean)
        .map((line) => Number(JSON.parse(line).id))
      expect(ids).toHaveLength(file.count)
      exported.push(...ids)
    }
    expect(manifest.output.length).toBeGreaterThan(3)
    expect(exported).toEqual(patients)
  }, 240_000)
})
