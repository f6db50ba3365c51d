import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CROSS_ORGANIZATION_WORK, DISTRIBUTED_TABLES } from '../../../db/sharding-plan.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { exported } from '../../helpers/bulk-export.js'
import { bearer, createPatient, newOrganization } from '../../helpers/factories.js'
import { PRACTICE_DAY_ENVIRONMENT, walkNewPracticeDay } from '../../helpers/practice-day.js'

// Every statement on a tenant table names the organization it works in, except the few that work
// across organizations by design, which carry a marker naming their reason and are listed in the
// sharding plan (db/sharding-plan.ts). This runs a practice day and the rest of the API's kinds of
// work and reads every statement the service sent.
const TENANT_TABLES = new Set<string>(DISTRIBUTED_TABLES)

const TABLE = /\b(?:from|join|update|into)\s+"?([a-z_]+)"?/gi
const ORGANIZATION_PREDICATE = /organization_id"?\s*(?:=\s*(?:any\s*\(\s*)?\$\d+|in\s*\(\s*\$\d+)/i
const INSERT_VALUES = /^\s*insert into "?[a-z_]+"?\s*\([^)]*"?organization_id"?[^)]*\)\s*values/i
const MARKER = /\/\* all organizations: ([^*]+) \*\//

const statements = new Set<string>()
let app: App
let baseUrl: string

beforeAll(async () => {
  app = await buildTestApp(PRACTICE_DAY_ENVIRONMENT)
  app.database.observe({
    query: (_seconds, _error, statement) => statements.add(statement),
    connectionError() {},
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await app.close()
})

const tablesOf = (statement: string) =>
  new Set(
    [...statement.matchAll(TABLE)].map((match) => match[1] as string).filter((t) => TENANT_TABLES.has(t)),
  )

describe('queries on tenant tables', () => {
  it('filter by organization, or are marked and named in the sharding plan', async () => {
    const { admin, result } = await walkNewPracticeDay(app, baseUrl)
    const token = admin.token
    const send = async (method: 'POST' | 'DELETE', url: string, payload?: object) => {
      const response = await app.inject({ method, url, headers: bearer(token), payload })
      expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300)
      return response.body ? response.json().data : undefined
    }
    const appointment = (
      await app.inject({ url: `/api/appointments/${result.appointmentId}`, headers: bearer(token) })
    ).json().data
    const encounter = await send('POST', '/api/encounters', {
      patientId: result.patientId,
      providerId: appointment.providerId,
      appointmentId: appointment.id,
      encounterDate: appointment.appointmentDate,
      encounterType: 'OFFICE_VISIT',
    })
    await send('POST', `/api/encounters/${encounter.id}/sign`)
    await send('POST', `/api/encounters/${encounter.id}/addendum`, { text: 'Reviewed' })
    await send('POST', '/api/telehealth/rooms', { appointmentId: appointment.id })
    await send('DELETE', `/api/patients/${await createPatient(app, admin)}`)
    const other = await newOrganization(app)
    const foreign = await createPatient(app, await other.user('ADMIN'))
    const reads = [
      '/api/patients?size=5',
      `/api/patients/${result.patientId}`,
      `/api/patients/${foreign}`,
      `/api/patients/${result.patientId}/chart`,
      `/api/appointments/${appointment.id}/versions/1`,
      `/fhir/R4/Encounter/${encounter.id}/_history`,
      `/fhir/R4/Encounter/${encounter.id}/_history/1`,
      '/api/appointments?size=5',
      '/api/encounters?size=5',
      '/api/billing/invoices?size=5',
      '/api/patients?updatedSince=2000-01-01T00:00:00Z',
      '/api/events?size=5',
      '/api/audit-events?size=5',
      `/fhir/R4/Patient/${result.patientId}`,
      `/fhir/R4/Patient?_id=${result.patientId}&_revinclude=Appointment:patient`,
      '/fhir/R4/Appointment?_include=Appointment:patient',
    ]
    for (const url of reads) {
      const response = await app.inject({ url, headers: bearer(token) })
      expect(response.statusCode, `${url}: ${response.body}`).toBeLessThan(500)
    }
    await exported(app, token, '/Patient/$export')
    await app.housekeeping.runOnce()

    const touched = new Set<string>()
    const unfiltered: string[] = []
    const reasons = new Set<string>()
    for (const statement of statements) {
      const tables = tablesOf(statement)
      for (const table of tables) touched.add(table)
      if (tables.size === 0 || ORGANIZATION_PREDICATE.test(statement) || INSERT_VALUES.test(statement))
        continue
      const reason = MARKER.exec(statement)?.[1]
      if (reason) reasons.add(reason)
      else unfiltered.push(statement)
    }
    expect(unfiltered).toEqual([])
    for (const reason of reasons) expect(Object.keys(CROSS_ORGANIZATION_WORK), reason).toContain(reason)
    // The run reached the tenant tables it was meant to reach.
    expect([...touched].sort()).toEqual([...TENANT_TABLES].sort())
  })
})
