import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { walkPracticeDay } from '../../../scripts/smoke/walk.js'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { PRACTICE_DAY_ENVIRONMENT, walkNewPracticeDay } from '../../helpers/practice-day.js'

let app: App
let baseUrl: string

beforeAll(async () => {
  app = await buildTestApp(PRACTICE_DAY_ENVIRONMENT)
  await app.listen({ host: '127.0.0.1', port: 0 })
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await app.close()
})

describe('npm run smoke (the walk through a practice day, over HTTP with the generated client)', () => {
  it('completes every step against the service on an ephemeral loopback port', async () => {
    const { organization, result } = await walkNewPracticeDay(app, baseUrl)

    expect(result.steps).toEqual([
      'log in',
      'register webhook',
      'create provider with hours',
      'create front desk user',
      'front desk signs in',
      'create patient',
      'find patient',
      'book appointment',
      'record vitals',
      'upload and download document',
      'create and pay invoice',
      'send and read message',
      'receive signed webhook calls',
    ])
    const desk = await app.db
      .selectFrom('users')
      .select(['roles', 'organization_id', 'password_change_required', 'active'])
      .where('id', '=', result.frontDeskUserId)
      .executeTakeFirstOrThrow()
    // Created by the walk's ADMIN, its temporary password changed, and deactivated at the end.
    expect(desk).toEqual({
      roles: ['FRONT_DESK'],
      organization_id: organization.id,
      password_change_required: false,
      active: false,
    })
    // The front desk registered the patient and booked: the audit trail (written in batches) names it.
    const createdByDesk = () =>
      app.db
        .selectFrom('audit_log')
        .select(['resource_type', 'resource_ids'])
        .where('user_id', '=', result.frontDeskUserId)
        .where('action', '=', 'CREATE')
        .orderBy('id')
        .execute()
    await expect.poll(createdByDesk, { timeout: 10_000 }).toEqual([
      { resource_type: 'patient', resource_ids: [result.patientId] },
      { resource_type: 'appointment', resource_ids: [result.appointmentId] },
    ])
    expect(result.events['patient.created']?.map((event) => event.data.id)).toEqual([result.patientId])
    expect(result.events['appointment.created']?.map((event) => event.data.id)).toEqual([
      result.appointmentId,
    ])
    expect(result.events['invoice.created']?.map((event) => event.data.id)).toEqual([result.invoiceId])
    expect(result.events['payment.received']?.[0]?.data.invoiceId).toBe(result.invoiceId)
  })

  it('stops at the first answer that is not a success, naming the step and the error code', async () => {
    await expect(
      walkPracticeDay({ baseUrl, admin: { username: 'nobody@example.test', password: 'wrong password!' } }),
    ).rejects.toThrow(/^log in: HTTP 401 .*AUTH_001/)
  })
})
