import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, createPatient, newOrganization, patientBody } from '../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

describe('conditional writes of a patient on PostgreSQL', () => {
  it('lets exactly one of 20 concurrent updates carrying the same If-Match succeed', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const id = await createPatient(app, nurse)
    const attempts = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.inject({
          method: i % 2 === 0 ? 'PUT' : 'PATCH',
          url: `/api/patients/${id}`,
          headers: { ...bearer(nurse.token), 'if-match': 'W/"1"' },
          payload: i % 2 === 0 ? patientBody({ preferredLanguage: 'en' }) : { preferredLanguage: 'fr' },
        }),
      ),
    )
    const statuses = attempts.map((response) => response.statusCode)
    expect(statuses.filter((status) => status === 200)).toHaveLength(1)
    expect(statuses.filter((status) => status === 412)).toHaveLength(19)
    const current = await app.inject({ url: `/api/patients/${id}`, headers: bearer(nurse.token) })
    expect(current.json().data.version).toBe(2)
    const events = await app.db
      .selectFrom('outbox_events')
      .select('id')
      .where('organization_id', '=', org.id)
      .where('event_type', '=', 'patient.updated')
      .execute()
    expect(events).toHaveLength(1)
  })

  it('keeps every one of 5 concurrent merge patches without If-Match that succeeded: none is lost', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const id = await createPatient(app, nurse)
    // Each patch sets another member; a lost update would leave one of them out.
    const members = ['street', 'city', 'state', 'postalCode', 'country'] as const
    const values = {
      street: '1 Main St',
      city: 'Springfield',
      state: 'IL',
      postalCode: '62701',
      country: 'US',
    }
    const attempts = await Promise.all(
      members.map((member) =>
        app.inject({
          method: 'PATCH',
          url: `/api/patients/${id}`,
          headers: bearer(nurse.token),
          payload: { contact: { address: { [member]: values[member] } } },
        }),
      ),
    )
    const statuses = attempts.map((response) => response.statusCode)
    // A patch that lost three rounds in a row answers 412; every one that answered 200 is kept.
    expect(statuses.every((status) => status === 200 || status === 412)).toBe(true)
    const address = (await app.inject({ url: `/api/patients/${id}`, headers: bearer(nurse.token) })).json()
      .data.contact.address
    members.forEach((member, i) => {
      if (statuses[i] === 200) expect(address[member]).toBe(values[member])
    })
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0)
  })
})
