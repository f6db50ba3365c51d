import type { Bundle, OperationOutcome } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, daysFromToday, tokenFor } from '../../helpers/factories.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import { booked, newPractice } from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const entriesOf = (bundle: Bundle, mode: 'match' | 'include' | 'outcome') =>
  (bundle.entry ?? []).filter((entry) => entry.search?.mode === mode)

describe('GET /fhir/R4/[type]?_include=', () => {
  it('adds the patient and practitioner of the matches, once each, as include entries', async () => {
    const practice = await newPractice(app)
    await booked(app, practice, daysFromToday(3), '10:00:00')
    await booked(app, practice, daysFromToday(4), '10:00:00')
    const response = await app.inject({
      url: `/fhir/R4/Appointment?patient=${practice.patient.id}&_include=Appointment:patient&_include=Appointment:practitioner`,
      headers: bearer(practice.nurse.token),
    })
    expect(response.statusCode).toBe(200)
    const bundle = response.json() as Bundle
    expect(fhirErrors(bundle)).toEqual([])
    expect(entriesOf(bundle, 'match')).toHaveLength(2)
    expect(
      entriesOf(bundle, 'include')
        .map((entry) => `${entry.resource?.resourceType}/${entry.resource?.id}`)
        .sort(),
    ).toEqual([`Patient/${practice.patient.id}`, `Practitioner/${practice.provider.id}`].sort())
    expect(bundle.link?.[0]?.url).toContain('_include=Appointment%3Apatient')
  })

  it('audits included records as REST reads of their types are: patients, not practitioners', async () => {
    const practice = await newPractice(app)
    await booked(app, practice, daysFromToday(5), '10:00:00')
    const response = await app.inject({
      url: `/fhir/R4/Appointment?patient=${practice.patient.id}&_include=Appointment:patient&_include=Appointment:practitioner`,
      headers: bearer(practice.nurse.token),
    })
    expect(response.statusCode).toBe(200)
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'request_id'])
      .where('organization_id', '=', practice.org.id)
      .where('action', 'in', ['READ', 'LIST'])
      .execute()
    const requestId = String(response.headers['x-request-id'])
    const ofRequest = rows
      .filter((row) => row.request_id === requestId)
      .map(({ action, resource_type, resource_ids }) => ({ action, resource_type, resource_ids }))
    expect(ofRequest).toHaveLength(2)
    expect(ofRequest).toContainEqual({
      action: 'READ',
      resource_type: 'patient',
      resource_ids: [practice.patient.id],
    })
    expect(ofRequest.find((row) => row.resource_type === 'appointment')?.action).toBe('LIST')
  })

  it('leaves out what the caller may not read: a token scoped to appointments gets no patients', async () => {
    const practice = await newPractice(app)
    await booked(app, practice, daysFromToday(3), '11:00:00')
    const nurse = practice.nurse
    const token = tokenFor(
      app,
      { subject: nurse.subject, email: nurse.email, roles: nurse.roles, groupPath: practice.org.groupPath },
      undefined,
      { scopes: ['user/Appointment.rs', 'user/Practitioner.r'] },
    )
    const bundle = (
      await app.inject({
        url: '/fhir/R4/Appointment?_include=Appointment:patient&_include=Appointment:practitioner',
        headers: bearer(token),
      })
    ).json() as Bundle
    expect(entriesOf(bundle, 'match')).toHaveLength(1)
    expect(entriesOf(bundle, 'include').map((entry) => entry.resource?.resourceType)).toEqual([
      'Practitioner',
    ])
  })

  it('ignores an include it does not know and says so, or refuses it with Prefer: handling=strict', async () => {
    const practice = await newPractice(app)
    await booked(app, practice, daysFromToday(3), '12:00:00')
    const url = '/fhir/R4/Appointment?_include=Appointment:location&_include=Patient:link'
    const lenient = await app.inject({ url, headers: bearer(practice.nurse.token) })
    expect(lenient.statusCode).toBe(200)
    const bundle = lenient.json() as Bundle
    expect(entriesOf(bundle, 'include')).toEqual([])
    const outcome = entriesOf(bundle, 'outcome')[0]?.resource as OperationOutcome
    expect(outcome.issue?.[0]?.diagnostics).toContain('_include=Appointment:location')
    expect(bundle.link?.[0]?.url).not.toContain('_include')
    const strict = await app.inject({
      url,
      headers: { ...bearer(practice.nurse.token), prefer: 'handling=strict' },
    })
    expect(strict.statusCode).toBe(400)
  })

  it('lists the includes of each type in the CapabilityStatement', async () => {
    const statement = (await app.inject({ url: '/fhir/R4/metadata' })).json()
    const appointment = statement.rest[0].resource.find(
      (resource: { type: string }) => resource.type === 'Appointment',
    )
    expect(appointment.searchInclude).toEqual(['Appointment:patient', 'Appointment:practitioner'])
  })
})
