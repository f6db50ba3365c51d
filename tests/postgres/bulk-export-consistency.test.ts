import { randomUUID } from 'node:crypto'
import type { Patient } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import type { App } from '../../src/app.js'
import { claimExport, insertExport } from '../../src/modules/fhir/export/jobs.js'
import { buildTestApp, newPostgresDatabase } from '../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../helpers/factories.js'

let handle: DatabaseHandle
let app: App

beforeAll(async () => {
  handle = openPostgres({ url: await newPostgresDatabase(), poolMax: 10 })
  app = await buildTestApp({}, undefined, { database: handle })
})
afterAll(async () => {
  await app.close()
})

const local = (url: string) => url.slice(url.indexOf('/fhir/R4'))

async function kickOff(user: TestUser, query: string) {
  const response = await app.inject({
    url: `/fhir/R4/$export?${query}`,
    headers: { ...bearer(user.token), prefer: 'respond-async' },
  })
  expect(response.statusCode).toBe(202)
  return local(String(response.headers['content-location']))
}

async function patientsOf(user: TestUser, status: string) {
  const manifest = (await app.inject({ url: status, headers: bearer(user.token) })).json() as {
    transactionTime: string
    output: { url: string }[]
  }
  const patients: Patient[] = []
  for (const file of manifest.output) {
    const body = (await app.inject({ url: local(file.url), headers: bearer(user.token) })).body
    patients.push(
      ...body
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Patient),
    )
  }
  return { transactionTime: manifest.transactionTime, patients }
}

describe('the transactionTime of a bulk export', () => {
  it('comes after every transaction open when the export starts: its changes are in, and not again after', async () => {
    const org = await newOrganization(app)
    const doctor = await org.user('PROVIDER')
    const nurse = await org.user('NURSE')
    const id = await createPatient(app, nurse)
    const status = await kickOff(doctor, '_type=Patient')

    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let written = () => {}
    const changed = new Promise<void>((resolve) => {
      written = resolve
    })
    // A slow writer: its change is stamped with its start, before the export's transactionTime.
    const writer = handle.db.transaction().execute(async (trx) => {
      await trx.updateTable('patients').set({ first_name: 'Late' }).where('id', '=', id).execute()
      written()
      await gate
    })
    await changed
    const exporting = app.bulkExports.drainOnce()
    await new Promise((resolve) => setTimeout(resolve, 400))
    const waiting = await handle.db
      .selectFrom('bulk_exports')
      .select('transaction_time')
      .where('id', '=', status.split('/').at(-1) as string)
      .executeTakeFirstOrThrow()
    expect(waiting.transaction_time).toBeNull()
    release()
    await writer
    await exporting

    const first = await patientsOf(doctor, status)
    expect(first.patients.map((patient) => [Number(patient.id), patient.name?.[0]?.given])).toEqual([
      [id, ['Late']],
    ])
    const next = await kickOff(doctor, `_type=Patient&_since=${first.transactionTime}`)
    await app.bulkExports.drainOnce()
    expect((await patientsOf(doctor, next)).patients).toEqual([])
  })
})

describe('claiming bulk exports', () => {
  it('runs at most the configured number per organization, and others’ meanwhile', async () => {
    const orgs = [await newOrganization(app), await newOrganization(app)]
    const users = [await orgs[0]?.user('PROVIDER'), await orgs[1]?.user('PROVIDER')] as TestUser[]
    const job = (index: number) => ({
      id: randomUUID(),
      organizationId: orgs[index]?.id as number,
      requestedBy: users[index]?.id as number,
      level: 'system' as const,
      groupId: null,
      types: ['Patient'],
      typeFilters: {},
      since: null,
      requestUrl: 'https://ehr.example/fhir/R4/$export',
      issues: [],
      expiresAt: new Date(Date.now() + 3_600_000),
    })
    const jobs = [job(0), job(0), job(1)]
    for (const each of jobs) await insertExport(handle.db, each)
    const claimed = [
      await claimExport(handle.db, 'instance-a', 60, 1, []),
      await claimExport(handle.db, 'instance-b', 60, 1, []),
      await claimExport(handle.db, 'instance-c', 60, 1, []),
    ]
    expect(claimed.map((each) => each?.id)).toEqual([jobs[0]?.id, jobs[2]?.id, undefined])
    expect((await claimExport(handle.db, 'instance-d', 60, 2, []))?.id).toBe(jobs[1]?.id)
  })
})
