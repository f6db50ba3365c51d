import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization, patientBody } from '../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

/** The list's totalElements, which comes from the counter rows the triggers keep. */
async function listTotal(token: string): Promise<number> {
  return (await app.inject({ url: '/api/patients?size=1', headers: bearer(token) })).json().data.totalElements
}

describe('concurrent writes on PostgreSQL', () => {
  it('lets exactly one of many simultaneous creations with the same MRN succeed', async () => {
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    const attempts = await Promise.all(
      Array.from({ length: 12 }, () =>
        app.inject({
          method: 'POST',
          url: '/api/patients',
          headers: bearer(user.token),
          payload: patientBody({ mrn: 'RACE-1' }),
        }),
      ),
    )
    const statuses = attempts.map((response) => response.statusCode).sort()
    expect(statuses.filter((status) => status === 201)).toHaveLength(1)
    expect(statuses.filter((status) => status === 409)).toHaveLength(11)
    const events = await app.db
      .selectFrom('outbox_events')
      .select('id')
      .where('organization_id', '=', org.id)
      .execute()
    expect(events).toHaveLength(1)
    expect(await listTotal(user.token)).toBe(1)
  })

  it('gives every concurrent creation without an MRN its own generated MRN, each counted once', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const created = await Promise.all(
      Array.from({ length: 20 }, () =>
        app.inject({
          method: 'POST',
          url: '/api/patients',
          headers: bearer(user.token),
          payload: patientBody(),
        }),
      ),
    )
    expect(created.every((response) => response.statusCode === 201)).toBe(true)
    const mrns = new Set(created.map((response) => response.json().data.mrn))
    expect(mrns.size).toBe(20)
    expect(await listTotal(user.token)).toBe(20)
  })

  it('serialises concurrent updates of one patient: one event per committed update, last write visible', async () => {
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    const patient = (
      await app.inject({
        method: 'POST',
        url: '/api/patients',
        headers: bearer(user.token),
        payload: patientBody(),
      })
    ).json().data
    const names = Array.from({ length: 10 }, (_, i) => `Concurrent${i}`)
    const updates = await Promise.all(
      names.map((lastName) =>
        app.inject({
          method: 'PUT',
          url: `/api/patients/${patient.id}`,
          headers: bearer(user.token),
          payload: { identification: { ...patient.identification, lastName } },
        }),
      ),
    )
    expect(updates.every((response) => response.statusCode === 200)).toBe(true)
    const events = await app.db
      .selectFrom('outbox_events')
      .select('event_type')
      .where('organization_id', '=', org.id)
      .execute()
    expect(events.filter((event) => event.event_type === 'patient.updated')).toHaveLength(10)
    const final = await app.inject({ url: `/api/patients/${patient.id}`, headers: bearer(user.token) })
    expect(names).toContain(final.json().data.identification.lastName)
  })
})
