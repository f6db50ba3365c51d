import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  type TestOrganization,
  type TestUser,
} from '../../helpers/factories.js'

let app: App
let org: TestOrganization
let alice: TestUser
let bob: TestUser
let carol: TestUser

beforeAll(async () => {
  app = await buildTestApp()
  org = await newOrganization(app)
  alice = await org.user('PROVIDER')
  bob = await org.user('NURSE')
  carol = await org.user('FRONT_DESK')
})
afterAll(async () => {
  await app.close()
})

const send = (from: TestUser, payload: object) =>
  app.inject({ method: 'POST', url: '/api/messages', headers: bearer(from.token), payload })
const mailbox = (user: TestUser, query = '') =>
  app.inject({ url: `/api/messages?${query}`, headers: bearer(user.token) })
const markRead = (user: TestUser, id: number) =>
  app.inject({ method: 'PUT', url: `/api/messages/${id}/read`, headers: bearer(user.token) })

describe('POST /api/messages', () => {
  it('sends to a colleague, about a patient, and threads replies', async () => {
    const patientId = await createPatient(app, alice)
    const first = await send(alice, {
      recipientId: bob.id,
      subject: 'Glucose',
      body: 'Please recheck.',
      patientId,
    })
    expect(first.statusCode).toBe(201)
    const message = first.json().data
    expect(message).toMatchObject({
      senderId: alice.id,
      recipientId: bob.id,
      patientId,
      threadId: message.id,
      readAt: null,
    })
    const reply = await send(bob, {
      recipientId: alice.id,
      subject: 'Re: Glucose',
      body: 'Done.',
      replyToId: message.id,
    })
    expect(reply.json().data).toMatchObject({ threadId: message.id, replyToId: message.id })
  })

  it('refuses a recipient outside the organization exactly like one that does not exist', async () => {
    const outsider = await (await newOrganization(app)).user('PROVIDER')
    const foreign = await send(alice, { recipientId: outsider.id, subject: 'Hi', body: 'x' })
    const nobody = await send(alice, { recipientId: 2_000_000_000, subject: 'Hi', body: 'x' })
    expect(foreign.statusCode).toBe(422)
    expect(foreign.json()).toEqual(nobody.json())
  })

  it("refuses another organization's patient and a reply to someone else's message", async () => {
    const outsider = await (await newOrganization(app)).user('PROVIDER')
    const theirPatient = await createPatient(app, outsider)
    expect(
      (await send(alice, { recipientId: bob.id, subject: 'x', body: 'x', patientId: theirPatient }))
        .statusCode,
    ).toBe(403)
    const private_ = (await send(alice, { recipientId: bob.id, subject: 'Private', body: 'x' })).json().data
    const hijack = await send(carol, {
      recipientId: alice.id,
      subject: 'Re',
      body: 'x',
      replyToId: private_.id,
    })
    expect(hijack.statusCode).toBe(422)
    expect(
      (await send(alice, { recipientId: bob.id, subject: 'x', body: 'x'.repeat(10_001) })).statusCode,
    ).toBe(422)
  })
})

describe('GET /api/messages', () => {
  it("lists only the caller's inbox or sent folder, newest first, with the unread filter", async () => {
    const dana = await org.user('BILLING')
    const erin = await org.user('NURSE')
    await send(dana, { recipientId: erin.id, subject: 'one', body: 'x' })
    const second = (await send(dana, { recipientId: erin.id, subject: 'two', body: 'x' })).json().data
    await send(erin, { recipientId: dana.id, subject: 'back', body: 'x' })

    const inbox = (await mailbox(erin)).json().data
    expect(inbox.content.map((m: { subject: string }) => m.subject)).toEqual(['two', 'one'])
    const sent = (await mailbox(erin, 'folder=sent')).json().data
    expect(sent.content.map((m: { subject: string }) => m.subject)).toEqual(['back'])
    await markRead(erin, second.id)
    const unread = (await mailbox(erin, 'unread=true')).json().data
    expect(unread.content.map((m: { subject: string }) => m.subject)).toEqual(['one'])
    expect(
      (await mailbox(carol)).json().data.content.map((m: { subject: string }) => m.subject),
    ).not.toContain('one')
  })
})

describe('PUT /api/messages/{id}/read', () => {
  it('is for the recipient only and keeps the first read time', async () => {
    const { id } = (await send(alice, { recipientId: bob.id, subject: 'Read me', body: 'x' })).json().data
    const first = await markRead(bob, id)
    expect(first.statusCode).toBe(200)
    const readAt = first.json().data.readAt
    expect(readAt).toBeTypeOf('string')
    const again = await markRead(bob, id)
    expect(again.json().data.readAt).toBe(readAt)
    expect((await markRead(alice, id)).statusCode).toBe(403)
    expect((await markRead(carol, id)).statusCode).toBe(404)
    const outsider = await (await newOrganization(app)).user('PROVIDER')
    expect((await markRead(outsider, id)).statusCode).toBe(404)
    expect((await app.inject({ url: `/api/messages/${id}`, headers: bearer(carol.token) })).statusCode).toBe(
      404,
    )
  })
})
