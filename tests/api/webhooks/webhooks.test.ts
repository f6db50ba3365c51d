import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { openSigningKey } from '../../../src/outbox/webhook-secrets.js'
import { buildTestApp } from '../../helpers/app.js'
import { stubDns } from '../../helpers/dns.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../../helpers/factories.js'
import { createPatientAs, registerWebhook } from '../../helpers/webhooks.js'

// DNS is stubbed: registration only resolves names, and the one delivery below is refused before
// any connection, so no test in this file sends a packet anywhere.
const dns: Record<string, string[]> = {
  'hooks.example.test': ['93.184.216.34'],
  'internal.example.test': ['10.0.0.5'],
  'mixed.example.test': ['93.184.216.34', '192.168.1.20'],
  'metadata.example.test': ['169.254.169.254'],
  'rebinding.example.test': ['93.184.216.34'],
}
const HOOK_URL = 'https://hooks.example.test/ehr'

let app: App

beforeAll(async () => {
  app = await buildTestApp({}, undefined, {
    resolveHost: stubDns(dns),
  })
})
afterAll(async () => {
  await app.close()
})

/**
 * Attempts the deliveries of one webhook only. Others in this file point at a name stubbed to a
 * public address; they are set aside so that nothing is ever sent there. (The database is this
 * file's own, so no other test's worker sees them either.)
 */
async function drainOnly(webhookId: number) {
  await app.db
    .updateTable('webhook_deliveries')
    .set({ status: 'FAILED' })
    .where('webhook_id', '<>', webhookId)
    .where('status', '=', 'PENDING')
    .execute()
  return app.outbox.drainOnce()
}

const post = (user: TestUser, payload: object) =>
  app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(user.token), payload })

describe('POST /api/webhooks', () => {
  it('returns 201 with the record and a generated whsec_ secret, shown only then and stored encrypted', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const response = await post(admin, { url: HOOK_URL, events: ['patient.created', 'patient.updated'] })
    expect(response.statusCode).toBe(201)
    const created = response.json().data
    expect(created).toMatchObject({
      url: HOOK_URL,
      events: ['patient.created', 'patient.updated'],
      active: true,
      deactivatedAt: null,
      failingSince: null,
    })
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)

    const read = await app.inject({ url: `/api/webhooks/${created.id}`, headers: bearer(admin.token) })
    expect(read.statusCode).toBe(200)
    expect(read.json().data).not.toHaveProperty('secret')
    expect(read.body).not.toContain(created.secret.slice(6))
    const listed = await app.inject({ url: '/api/webhooks', headers: bearer(admin.token) })
    expect(listed.body).not.toContain(created.secret.slice(6))

    const row = await app.db
      .selectFrom('webhooks')
      .select('secret')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow()
    expect(row.secret).not.toContain(created.secret.slice(6))
    expect(openSigningKey(app.secretBox, org.id, row.secret)).toEqual(
      Buffer.from(created.secret.slice(6), 'base64'),
    )
    expect(() => openSigningKey(app.secretBox, org.id + 1, row.secret)).toThrow()
  })

  it('returns a null secret when the caller chose it, and accepts a whsec_ secret of 24 to 64 bytes', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const chosen = await post(admin, { url: HOOK_URL, events: ['*'], secret: 'a-long-enough-shared-secret' })
    expect(chosen.statusCode).toBe(201)
    expect(chosen.json().data.secret).toBeNull()
    const standard = `whsec_${Buffer.alloc(24, 1).toString('base64')}`
    expect((await post(admin, { url: HOOK_URL, events: ['*'], secret: standard })).statusCode).toBe(201)
  })

  it.each([
    ['no events', { events: [] }, 'events'],
    ['an unknown event', { events: ['patient.exploded'] }, 'events'],
    ['a short secret', { secret: 'too-short' }, 'secret'],
    ['a whsec_ secret of 16 bytes', { secret: `whsec_${Buffer.alloc(16, 1).toString('base64')}` }, 'secret'],
    ['a whsec_ secret that is not base64', { secret: 'whsec_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!' }, 'secret'],
    ['an unknown field', { retries: 3 }, 'retries'],
    ['a relative url', { url: '/hooks' }, 'url'],
  ])('returns 422 VAL_001 for %s', async (_label, change, field) => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const response = await post(admin, { url: HOOK_URL, events: ['*'], ...change })
    expect(response.statusCode).toBe(422)
    expect(response.json().error.code).toBe('VAL_001')
    expect(response.json().error.details).toContain(field)
  })

  it('returns 403 AUTH_003 for a caller without ADMIN', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING')
    const response = await post(provider, { url: HOOK_URL, events: ['*'] })
    expect(response.statusCode).toBe(403)
    expect(response.json().error.code).toBe('AUTH_003')
  })
})

describe('SSRF protection (WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE_TARGETS off)', () => {
  it.each([
    ['http', 'http://hooks.example.test/ehr', 'https'],
    ['IPv4 loopback', 'https://127.0.0.1/hooks', 'internal'],
    ['another loopback address', 'https://127.1.2.3:8443/hooks', 'internal'],
    ['IPv6 loopback', 'https://[::1]/hooks', 'internal'],
    ['localhost', 'https://localhost/hooks', 'this machine'],
    ['a name under localhost', 'https://api.localhost/hooks', 'this machine'],
    ['10.0.0.0/8', 'https://10.1.2.3/hooks', 'internal'],
    ['172.16.0.0/12', 'https://172.20.0.1/hooks', 'internal'],
    ['192.168.0.0/16', 'https://192.168.0.10/hooks', 'internal'],
    ['link-local', 'https://169.254.10.10/hooks', 'internal'],
    ['the cloud metadata address', 'https://169.254.169.254/latest/meta-data', 'internal'],
    ['a decimal-encoded loopback address', 'https://2130706433/hooks', 'internal'],
    ['Alibaba’s metadata address (CGNAT)', 'https://100.100.100.200/hooks', 'internal'],
    ['the unspecified address', 'https://0.0.0.0/hooks', 'internal'],
    ['an IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]/hooks', 'internal'],
    ['IPv6 unique-local (AWS metadata)', 'https://[fd00:ec2::254]/hooks', 'internal'],
    ['IPv6 link-local', 'https://[fe80::1]/hooks', 'internal'],
    ['a name resolving to a private address', 'https://internal.example.test/hooks', 'internal'],
    ['a name resolving to the metadata address', 'https://metadata.example.test/hooks', 'internal'],
    ['a name with one public and one private address', 'https://mixed.example.test/hooks', 'internal'],
    ['a name that does not resolve', 'https://nowhere.example.test/hooks', 'does not resolve'],
    ['credentials in the url', 'https://user:pass@hooks.example.test/hooks', 'credentials'],
  ])('refuses %s at registration with 422 VAL_001', async (_label, url, reason) => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const response = await post(admin, { url, events: ['*'] })
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toMatchObject({ code: 'VAL_001' })
    expect(response.json().error.details).toMatch(new RegExp(`^url .*${reason}`))
    expect(response.json().error.fields).toEqual([{ path: 'url', message: expect.stringContaining(reason) }])
  })

  it('refuses the same on update', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL })
    const response = await app.inject({
      method: 'PUT',
      url: `/api/webhooks/${webhook.id}`,
      headers: bearer(admin.token),
      payload: { url: 'https://internal.example.test/hooks', events: ['*'] },
    })
    expect(response.statusCode).toBe(422)
  })

  it('checks again at delivery time: a name that now resolves to a private address gets no connection', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: 'https://rebinding.example.test/ehr' })
    dns['rebinding.example.test'] = ['10.0.0.7']
    await createPatientAs(app, admin, patientBody())

    expect(await drainOnly(webhook.id)).toBe(1)

    const listed = await app.inject({
      url: `/api/webhooks/${webhook.id}/deliveries`,
      headers: bearer(admin.token),
    })
    const [delivery] = listed.json().data.content
    expect(delivery).toMatchObject({
      status: 'PENDING',
      attemptCount: 1,
      lastStatusCode: null,
      lastError: 'url resolves to a loopback, private, link-local or otherwise internal address',
    })
    // The default schedule: the first retry 5 s later, give or take 20%.
    const wait = new Date(delivery.nextAttemptAt).getTime() - new Date(delivery.lastAttemptAt).getTime()
    expect(wait).toBeGreaterThan(3500)
    expect(wait).toBeLessThan(6500)
  })

  it('checks a literal address stored before the rules changed, before connecting', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL })
    await app.db
      .updateTable('webhooks')
      .set({ url: 'https://10.0.0.8/ehr' })
      .where('id', '=', webhook.id)
      .execute()
    await createPatientAs(app, admin, patientBody())
    await drainOnly(webhook.id)
    const row = await app.db
      .selectFrom('webhook_deliveries')
      .select(['last_error', 'attempt_count'])
      .where('webhook_id', '=', webhook.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({
      last_error: 'url resolves to a loopback, private, link-local or otherwise internal address',
      attempt_count: 1,
    })
  })
})

describe('managing webhooks', () => {
  it('lists the organization’s webhooks only, as a page, filtered by active', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const other = await (await newOrganization(app)).user('ADMIN')
    const first = await registerWebhook(app, admin, { url: HOOK_URL })
    const second = await registerWebhook(app, admin, { url: `${HOOK_URL}/2`, events: ['patient.created'] })
    await registerWebhook(app, other, { url: HOOK_URL })
    await app.inject({
      method: 'PUT',
      url: `/api/webhooks/${second.id}`,
      headers: bearer(admin.token),
      payload: { url: second.url, events: ['patient.created'], active: false },
    })
    const all = await app.inject({ url: '/api/webhooks', headers: bearer(admin.token) })
    expect(all.statusCode).toBe(200)
    expect(all.json().data).toMatchObject({ totalElements: 2, first: true, last: true })
    expect(all.json().data.content.map((webhook: { id: number }) => webhook.id)).toEqual([
      first.id,
      second.id,
    ])
    const active = await app.inject({ url: '/api/webhooks?active=true', headers: bearer(admin.token) })
    expect(active.json().data.content.map((webhook: { id: number }) => webhook.id)).toEqual([first.id])
  })

  it('updates url and events, keeps active when omitted, and stores * alone', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL, events: ['patient.created'] })
    const response = await app.inject({
      method: 'PUT',
      url: `/api/webhooks/${webhook.id}`,
      headers: bearer(admin.token),
      payload: { url: `${HOOK_URL}/v2`, events: ['patient.updated', '*'] },
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ url: `${HOOK_URL}/v2`, events: ['*'], active: true })
  })

  it('returns 422 VAL_002 naming url and events for a PUT that leaves them out (PUT replaces; PATCH merges), and changes nothing', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL, events: ['patient.created'] })
    const response = await app.inject({
      method: 'PUT',
      url: `/api/webhooks/${webhook.id}`,
      headers: bearer(admin.token),
      payload: { active: false },
    })
    expect(response.statusCode).toBe(422)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'VAL_002' } })
    expect(
      response
        .json()
        .error.fields.map((field: { path: string }) => field.path)
        .sort(),
    ).toEqual(['events', 'url'])
    const read = await app.inject({ url: `/api/webhooks/${webhook.id}`, headers: bearer(admin.token) })
    expect(read.json().data).toMatchObject({ url: HOOK_URL, events: ['patient.created'], active: true })

    const patched = await app.inject({
      method: 'PATCH',
      url: `/api/webhooks/${webhook.id}`,
      headers: { ...bearer(admin.token), 'content-type': 'application/merge-patch+json' },
      payload: { active: false },
    })
    expect(patched.statusCode).toBe(200)
    expect(patched.json().data).toMatchObject({ url: HOOK_URL, events: ['patient.created'], active: false })
  })

  it('deletes a webhook with its deliveries; then it is 404', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL })
    await createPatientAs(app, admin, patientBody())
    const deleted = await app.inject({
      method: 'DELETE',
      url: `/api/webhooks/${webhook.id}`,
      headers: bearer(admin.token),
    })
    expect(deleted.statusCode).toBe(200)
    expect(deleted.json().data).toEqual({ id: webhook.id })
    const gone = await app.inject({ url: `/api/webhooks/${webhook.id}`, headers: bearer(admin.token) })
    expect(gone.statusCode).toBe(404)
    expect(gone.json().error.code).toBe('RES_001')
    const rows = await app.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('webhook_id', '=', webhook.id)
      .execute()
    expect(rows).toEqual([])
  })

  it('rotates to a chosen secret without returning it', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL })
    const response = await app.inject({
      method: 'POST',
      url: `/api/webhooks/${webhook.id}/rotate-secret`,
      headers: bearer(admin.token),
      payload: { secret: 'the next shared secret' },
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data.secret).toBeNull()
    expect(response.json().data.previousSecretExpiresAt).toEqual(expect.any(String))
  })

  it('returns 409 RES_002 for a test event to an inactive webhook', async () => {
    const admin = await (await newOrganization(app)).user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL })
    await app.inject({
      method: 'PUT',
      url: `/api/webhooks/${webhook.id}`,
      headers: bearer(admin.token),
      payload: { url: HOOK_URL, events: ['*'], active: false },
    })
    const response = await app.inject({
      method: 'POST',
      url: `/api/webhooks/${webhook.id}/test`,
      headers: bearer(admin.token),
    })
    expect(response.statusCode).toBe(409)
    expect(response.json().error.code).toBe('RES_002')
  })

  it('returns 403 AUTH_003 for every route on another organization’s webhook, and 404 for a missing one', async () => {
    const owner = await (await newOrganization(app)).user('ADMIN')
    const stranger = await (await newOrganization(app)).user('ADMIN')
    const webhook = await registerWebhook(app, owner, { url: HOOK_URL })
    await createPatientAs(app, owner, patientBody())
    const delivery = await app.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('webhook_id', '=', webhook.id)
      .executeTakeFirstOrThrow()
    const routes = (id: number) => [
      { method: 'GET' as const, url: `/api/webhooks/${id}` },
      { method: 'PUT' as const, url: `/api/webhooks/${id}`, payload: { url: HOOK_URL, events: ['*'] } },
      { method: 'DELETE' as const, url: `/api/webhooks/${id}` },
      { method: 'POST' as const, url: `/api/webhooks/${id}/rotate-secret`, payload: {} },
      { method: 'POST' as const, url: `/api/webhooks/${id}/test` },
      { method: 'GET' as const, url: `/api/webhooks/${id}/deliveries` },
      { method: 'GET' as const, url: `/api/webhooks/${id}/deliveries/${delivery.id}` },
      { method: 'POST' as const, url: `/api/webhooks/${id}/deliveries/${delivery.id}/redeliver` },
    ]
    for (const route of routes(webhook.id)) {
      const response = await app.inject({ ...route, headers: bearer(stranger.token) })
      expect(response.statusCode, route.url).toBe(403)
      expect(response.json().error.code).toBe('AUTH_003')
    }
    for (const route of routes(2_000_000_000)) {
      const response = await app.inject({ ...route, headers: bearer(stranger.token) })
      expect(response.statusCode, route.url).toBe(404)
    }
    const missingDelivery = await app.inject({
      url: `/api/webhooks/${webhook.id}/deliveries/2000000000`,
      headers: bearer(owner.token),
    })
    expect(missingDelivery.statusCode).toBe(404)
  })

  it('records who changed webhooks in the audit log', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const webhook = await registerWebhook(app, admin, { url: HOOK_URL })
    await app.auditLog.flush()
    const records = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'user_id'])
      .where('organization_id', '=', org.id)
      .execute()
    expect(records).toContainEqual({
      action: 'CREATE',
      resource_type: 'webhook',
      resource_ids: [webhook.id],
      user_id: admin.id,
    })
  })
})
