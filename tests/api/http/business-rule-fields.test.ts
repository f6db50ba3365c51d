import type { LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { stubDns } from '../../helpers/dns.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  everyDay,
  newOrganization,
  patientBody,
  providerBody,
  type TestUser,
} from '../../helpers/factories.js'
import { book, newPractice } from '../../helpers/scheduling.js'

// Rules the schema cannot state (a check digit, one value against another, a refused address)
// answer like a schema failure: 422 with every field at fault in `error.fields`.

// Registration resolves webhook hosts: stubbed, so that no test here depends on real DNS.
const dns: Record<string, string[]> = {
  'hooks.example.test': ['93.184.216.34'],
  'internal.example.test': ['10.0.0.5'],
}

let app: App
let admin: TestUser
let nurse: TestUser

beforeAll(async () => {
  app = await buildTestApp({}, undefined, {
    resolveHost: stubDns(dns),
  })
  const org = await newOrganization(app)
  admin = await org.user('ADMIN')
  nurse = await org.user('NURSE')
})
afterAll(async () => {
  await app.close()
})

const post = (user: TestUser, url: string, payload: object) =>
  app.inject({ method: 'POST', url, headers: bearer(user.token), payload })

/** A 422 whose `error` is exactly the envelope of one or more fields breaking a rule. */
function expectFields(
  response: LightMyRequestResponse,
  details: string,
  fields: { path: string; message: string }[],
) {
  expect(response.statusCode).toBe(422)
  expect(response.json()).toEqual({
    success: false,
    message: 'Validation failed',
    error: { code: 'VAL_001', details, fields },
  })
}

describe('POST /api/providers', () => {
  it('returns 422 naming npi when its check digit is wrong', async () => {
    const npi = providerBody().npi
    const wrong = `${npi.slice(0, 9)}${(Number(npi[9]) + 1) % 10}`
    expectFields(
      await post(admin, '/api/providers', providerBody({ npi: wrong })),
      'npi fails the NPI check digit',
      [{ path: 'npi', message: 'fails the NPI check digit' }],
    )
  })

  it('returns 422 naming the interval when working hours end before they start', async () => {
    const response = await post(
      admin,
      '/api/providers',
      providerBody({ weeklyHours: [{ dayOfWeek: 'MONDAY', startTime: '17:00:00', endTime: '09:00:00' }] }),
    )
    expectFields(response, 'weeklyHours.0.endTime must be after startTime', [
      { path: 'weeklyHours.0.endTime', message: 'must be after startTime' },
    ])
  })
})

describe('POST /api/patients/{patientId}/vitals', () => {
  it('returns 422 naming diastolic when it is not below systolic', async () => {
    const patientId = await createPatient(app, nurse)
    const response = await post(nurse, `/api/patients/${patientId}/vitals`, { systolic: 120, diastolic: 130 })
    expectFields(response, 'diastolic must be below systolic', [
      { path: 'diastolic', message: 'must be below systolic' },
    ])
  })

  it('returns 422 for the body as a whole when it holds no measurement', async () => {
    const patientId = await createPatient(app, nurse)
    const response = await post(nurse, `/api/patients/${patientId}/vitals`, {})
    const measurements =
      'systolic, diastolic, heartRate, respiratoryRate, temperature, spo2, heightCm, weightKg, painScore'
    expectFields(response, `vitals need at least one measurement (${measurements})`, [
      { path: '', message: `must hold at least one measurement (${measurements})` },
    ])
  })
})

describe('POST /api/webhooks', () => {
  it.each([
    ['http://hooks.example.test/ehr', 'must use https'],
    [
      'https://internal.example.test/ehr',
      'resolves to a loopback, private, link-local or otherwise internal address',
    ],
    ['https://127.0.0.1/ehr', 'resolves to a loopback, private, link-local or otherwise internal address'],
    ['https://user:pw@hooks.example.test/ehr', 'must not contain credentials'],
    ['https://nowhere.example.test/ehr', 'host does not resolve'],
  ])('returns 422 naming url for %s', async (url, message) => {
    const response = await post(admin, '/api/webhooks', { url, events: ['patient.created'] })
    expectFields(response, `url ${message}`, [{ path: 'url', message }])
  })
})

describe('POST /api/patients', () => {
  it('returns 422 naming identification.dateOfBirth when it is in the future', async () => {
    const body = patientBody()
    const response = await post(nurse, '/api/patients', {
      ...body,
      identification: { ...body.identification, dateOfBirth: daysFromToday(400) },
    })
    expectFields(response, 'identification.dateOfBirth must not be in the future', [
      { path: 'identification.dateOfBirth', message: 'must not be in the future' },
    ])
  })
})

describe('POST /api/appointments', () => {
  it('returns 422 naming the date and time of an appointment in the past', async () => {
    const practice = await newPractice(app, { weeklyHours: everyDay(['00:00', '23:30']) })
    const response = await book(app, practice.nurse, {
      patientId: practice.patient.id,
      providerId: practice.provider.id,
      appointmentDate: daysFromToday(-1),
      appointmentTime: '10:00:00',
    })
    expectFields(response, 'The appointment would start in the past', [
      { path: 'appointmentDate', message: 'must not be in the past' },
      { path: 'appointmentTime', message: 'must not be in the past' },
    ])
  })
})

describe('POST /api/messages', () => {
  it('returns 422 naming recipientId when it is not a colleague', async () => {
    const stranger = await (await newOrganization(app)).user('NURSE')
    const response = await post(nurse, '/api/messages', {
      recipientId: stranger.id,
      subject: 'Glucose',
      body: 'Please recheck.',
    })
    expectFields(response, 'recipientId is not an active user of your organization', [
      { path: 'recipientId', message: 'is not an active user of your organization' },
    ])
  })
})
