import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectNoOpWrite } from '../../helpers/no-op-writes.js'
import { registerWebhook } from '../../helpers/webhooks.js'

// DNS is stubbed: registration only resolves names; nothing in this file is delivered.
const dns: Record<string, string[]> = {
  'hooks.example.test': ['93.184.216.34'],
  'other.example.test': ['93.184.216.35'],
  'internal.example.test': ['10.0.0.5'],
}
const HOOK_URL = 'https://hooks.example.test/ehr'
const OTHER_URL = 'https://other.example.test/ehr'

const resolveHost = async (hostname: string) => {
  const addresses = dns[hostname]
  if (!addresses) throw Object.assign(new Error(`no such host ${hostname}`), { code: 'ENOTFOUND' })
  return addresses
}

let app: App

beforeAll(async () => {
  app = await buildTestApp({}, undefined, { resolveHost })
})
afterAll(async () => {
  await app.close()
})

type Headers = Record<string, string>

async function administrator(target = app) {
  const org = await newOrganization(target)
  return org.user('ADMIN')
}

const newWebhook = (admin: TestUser, events = ['patient.created']) =>
  registerWebhook(app, admin, { url: HOOK_URL, events })

const read = (admin: TestUser, id: number, headers: Headers = {}) =>
  app.inject({ url: `/api/webhooks/${id}`, headers: { ...bearer(admin.token), ...headers } })
const put = (admin: TestUser, id: number, body: object, headers: Headers = {}) =>
  app.inject({
    method: 'PUT',
    url: `/api/webhooks/${id}`,
    headers: { ...bearer(admin.token), ...headers },
    payload: body,
  })
const patch = (admin: TestUser, id: number, body: unknown, headers: Headers = {}) =>
  app.inject({
    method: 'PATCH',
    url: `/api/webhooks/${id}`,
    headers: { ...bearer(admin.token), 'content-type': 'application/merge-patch+json', ...headers },
    payload: JSON.stringify(body),
  })
const rotate = (admin: TestUser, id: number, headers: Headers = {}) =>
  app.inject({
    method: 'POST',
    url: `/api/webhooks/${id}/rotate-secret`,
    headers: { ...bearer(admin.token), ...headers },
    payload: {},
  })
const remove = (admin: TestUser, id: number, headers: Headers = {}) =>
  app.inject({
    method: 'DELETE',
    url: `/api/webhooks/${id}`,
    headers: { ...bearer(admin.token), ...headers },
  })

describe('versions and ETags of webhooks', () => {
  it('starts at 1 and adds one on every change (update, rotation), with the ETag', async () => {
    const admin = await administrator()
    const created = await app.inject({
      method: 'POST',
      url: '/api/webhooks',
      headers: bearer(admin.token),
      payload: { url: HOOK_URL, events: ['*'] },
    })
    expect(created.statusCode).toBe(201)
    expect(created.headers.etag).toBe('W/"1"')
    const id = created.json().data.id as number
    expect((await read(admin, id)).headers.etag).toBe('W/"1"')

    const updated = await put(admin, id, { url: OTHER_URL, events: ['*'] })
    expect(updated.json().data.version).toBe(2)
    expect(updated.headers.etag).toBe('W/"2"')
    const rotated = await rotate(admin, id)
    expect(rotated.statusCode).toBe(200)
    expect(rotated.json().data.version).toBe(3)
    expect(rotated.headers.etag).toBe('W/"3"')
  })

  it('answers 304 without a body for a current If-None-Match, 200 once the webhook changed', async () => {
    const admin = await administrator()
    const { id } = await newWebhook(admin)
    const notModified = await read(admin, id, { 'if-none-match': 'W/"1"' })
    expect(notModified.statusCode).toBe(304)
    expect(notModified.body).toBe('')
    expect(notModified.headers.etag).toBe('W/"1"')
    await patch(admin, id, { active: false })
    const stale = await read(admin, id, { 'if-none-match': 'W/"1"' })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data.active).toBe(false)
  })

  it('returns 412 RES_003 for a stale If-Match on PUT, rotation and DELETE, and changes nothing', async () => {
    const admin = await administrator()
    const { id } = await newWebhook(admin)
    expect(
      (await put(admin, id, { url: OTHER_URL, events: ['*'] }, { 'if-match': 'W/"1"' })).statusCode,
    ).toBe(200)
    const stalePut = await put(admin, id, { url: HOOK_URL, events: ['*'] }, { 'if-match': 'W/"1"' })
    expect(stalePut.statusCode).toBe(412)
    expect(stalePut.json().error.code).toBe('RES_003')
    expect(stalePut.json().error.details).toContain('current version is 2')
    const staleRotation = await rotate(admin, id, { 'if-match': 'W/"1"' })
    expect(staleRotation.statusCode).toBe(412)
    const staleDelete = await remove(admin, id, { 'if-match': 'W/"1"' })
    expect(staleDelete.statusCode).toBe(412)
    const current = (await read(admin, id)).json().data
    expect(current).toMatchObject({ url: OTHER_URL, version: 2, previousSecretExpiresAt: null })

    const rotated = await rotate(admin, id, { 'if-match': 'W/"2"' })
    expect(rotated.statusCode).toBe(200)
    expect(rotated.json().data.secret).toMatch(/^whsec_/)
    expect((await remove(admin, id, { 'if-match': 'W/"3"' })).statusCode).toBe(200)
    expect((await read(admin, id)).statusCode).toBe(404)
  })

  it('answers 403 for another organization’s webhook and 404 for none, If-Match or not', async () => {
    const admin = await administrator()
    const { id } = await newWebhook(await administrator())
    expect((await patch(admin, id, { active: false }, { 'if-match': 'W/"1"' })).statusCode).toBe(403)
    expect((await remove(admin, 2_000_000_000, { 'if-match': 'W/"1"' })).statusCode).toBe(404)
  })
})

describe('REQUIRE_IF_MATCH=true on webhooks', () => {
  it('returns 428 for PUT, PATCH, rotation and DELETE without If-Match, and accepts them with it', async () => {
    const strict = await buildTestApp({ REQUIRE_IF_MATCH: 'true' }, undefined, { resolveHost })
    try {
      const admin = await administrator(strict)
      const { id } = await registerWebhook(strict, admin, { url: HOOK_URL })
      const url = `/api/webhooks/${id}`
      const attempts = [
        { method: 'PUT' as const, url, payload: { url: HOOK_URL, events: ['*'] } },
        { method: 'PATCH' as const, url, payload: { active: false } },
        { method: 'POST' as const, url: `${url}/rotate-secret`, payload: {} },
        { method: 'DELETE' as const, url },
      ]
      for (const attempt of attempts) {
        const response = await strict.inject({ ...attempt, headers: bearer(admin.token) })
        expect(response.statusCode, attempt.method).toBe(428)
        expect(response.json().error.code).toBe('RES_003')
      }
      const withHeader = await strict.inject({
        method: 'PATCH',
        url,
        headers: { ...bearer(admin.token), 'if-match': 'W/"1"' },
        payload: { active: false },
      })
      expect(withHeader.statusCode).toBe(200)
      expect(withHeader.json().data.version).toBe(2)
    } finally {
      await strict.close()
    }
  })
})

describe('PUT and PATCH /api/webhooks/{id} that change nothing', () => {
  it('keep the version, ETag and updatedAt; If-Match is still checked; a real change still counts', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const { id } = await newWebhook(admin, ['patient.created', 'patient.updated'])
    const same = { url: HOOK_URL, events: ['patient.created', 'patient.updated'], active: true }
    await expectNoOpWrite(
      app,
      org.id,
      () => read(admin, id),
      () => put(admin, id, same),
    )
    await expectNoOpWrite(
      app,
      org.id,
      () => read(admin, id),
      () => patch(admin, id, {}, { 'if-match': 'W/"1"' }),
    )
    expect((await put(admin, id, same, { 'if-match': 'W/"2"' })).statusCode).toBe(412)
    const changed = await patch(admin, id, { active: false })
    expect(changed.statusCode, changed.body).toBe(200)
    expect(changed.headers.etag).toBe('W/"2"')
  })
})

describe('PATCH /api/webhooks/{id}', () => {
  it('changes only the members sent; events are replaced whole', async () => {
    const admin = await administrator()
    const { id } = await newWebhook(admin, ['patient.created', 'patient.updated'])
    const paused = await patch(admin, id, { active: false })
    expect(paused.statusCode).toBe(200)
    expect(paused.json().data).toMatchObject({
      url: HOOK_URL,
      events: ['patient.created', 'patient.updated'],
      active: false,
      deactivationReason: 'MANUAL',
      version: 2,
    })
    const replaced = await patch(admin, id, { events: ['invoice.created'] })
    expect(replaced.json().data).toMatchObject({ events: ['invoice.created'], active: false, url: HOOK_URL })
    expect((await read(admin, id)).json().data).toEqual(replaced.json().data)
  })

  it('leaves the active flag as it is when the patch removes it with null', async () => {
    const admin = await administrator()
    const { id } = await newWebhook(admin)
    await patch(admin, id, { active: false })
    const response = await patch(admin, id, { active: null, url: OTHER_URL })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ url: OTHER_URL, active: false })
  })

  it('returns 422 for read-only or unknown members, null on a required one, an invalid merge, and stores nothing', async () => {
    const admin = await administrator()
    const { id } = await newWebhook(admin)
    for (const body of [
      { id: 5 },
      { version: 9 },
      { secret: 'a-new-secret-of-some-length' },
      { url: null },
      { events: [] },
      { url: 'https://internal.example.test/ehr' },
      ['not', 'an', 'object'],
    ]) {
      const response = await patch(admin, id, body)
      expect(response.statusCode, JSON.stringify(body)).toBe(422)
      expect(response.json().success).toBe(false)
    }
    expect((await read(admin, id)).json().data).toMatchObject({ version: 1, url: HOOK_URL })
  })

  it('honours If-Match', async () => {
    const admin = await administrator()
    const { id } = await newWebhook(admin)
    const stale = await patch(admin, id, { active: false }, { 'if-match': 'W/"2"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().error.details).toContain('current version is 1')
    expect((await read(admin, id)).json().data.active).toBe(true)
    expect((await patch(admin, id, { active: false }, { 'if-match': 'W/"1"' })).statusCode).toBe(200)
  })
})

interface SyncItem {
  id: number
  version?: number
  updatedAt?: string
  deleted?: true
  deletedAt?: string
}

async function walk(admin: TestUser, query: string, size: number, between?: (page: number) => Promise<void>) {
  const seen: SyncItem[] = []
  let url = `/api/webhooks?${query}&size=${size}`
  const filters = query.replace(/(^|&)updatedSince=[^&]*/, '')
  for (let page = 0; page < 100; page++) {
    const response = await app.inject({ url, headers: bearer(admin.token) })
    expect(response.statusCode, url).toBe(200)
    const data = response.json().data
    expect(data.totalElements).toBeUndefined()
    // Within a page, records come in position order and then the page's tombstones.
    const positions = data.content.map(
      (item: SyncItem) => `${item.updatedAt}|${String(item.id).padStart(10, '0')}`,
    )
    expect([...positions].sort()).toEqual(positions)
    seen.push(...data.content, ...(data.deleted ?? []))
    if (data.last) return { seen, cursor: data.nextCursor as string }
    await between?.(page)
    url = `/api/webhooks?cursor=${data.nextCursor}&size=${size}${filters ? `&${filters.replace(/^&/, '')}` : ''}`
  }
  throw new Error('the walk did not end')
}

const since = (start: string) => `updatedSince=${encodeURIComponent(start)}`

describe('GET /api/webhooks with updatedSince and cursor', () => {
  it('returns each webhook once in (updatedAt, id) order, a changed one again, a deleted one as a tombstone', async () => {
    const admin = await administrator()
    const start = new Date(Date.now() - 60_000).toISOString()
    const ids: number[] = []
    for (let i = 0; i < 7; i++) ids.push((await newWebhook(admin)).id)
    const [changed, deleted] = [ids[0] as number, ids[1] as number]
    const { seen } = await walk(admin, since(start), 2, async (page) => {
      if (page !== 1) return
      await patch(admin, changed, { active: false })
      await remove(admin, deleted)
    })
    for (const id of ids.slice(2)) expect(seen.filter((item) => item.id === id)).toHaveLength(1)
    expect(seen.filter((item) => item.id === changed).map((item) => item.version)).toEqual([1, 2])
    const tombstone = seen.filter((item) => item.id === deleted).at(-1)
    expect(tombstone).toEqual({ id: deleted, deleted: true, deletedAt: expect.any(String) })
  })

  it('resumes from the last cursor with what changed since, and never shows another organization’s webhooks', async () => {
    const admin = await administrator()
    const stranger = await administrator()
    const start = new Date(Date.now() - 60_000).toISOString()
    const first = (await newWebhook(admin)).id
    const foreign = (await newWebhook(stranger)).id
    const { seen, cursor } = await walk(admin, since(start), 5)
    expect(seen.map((item) => item.id)).toEqual([first])
    await remove(stranger, foreign)
    await remove(admin, first)
    const resumed = await app.inject({ url: `/api/webhooks?cursor=${cursor}`, headers: bearer(admin.token) })
    expect(resumed.statusCode).toBe(200)
    expect(resumed.json().data.content).toEqual([])
    expect(resumed.json().data.deleted).toEqual([{ id: first, deleted: true, deletedAt: expect.any(String) }])
    expect(resumed.json().data.last).toBe(true)
  })

  it('applies the active filter', async () => {
    const admin = await administrator()
    const start = new Date(Date.now() - 60_000).toISOString()
    const active = (await newWebhook(admin)).id
    const inactive = (await newWebhook(admin)).id
    await patch(admin, inactive, { active: false })
    const { seen } = await walk(admin, `${since(start)}&active=true`, 10)
    expect(seen.map((item) => item.id)).toEqual([active])
  })

  it('returns 400 for a tampered cursor and for a cursor sent with other filters', async () => {
    const admin = await administrator()
    await newWebhook(admin)
    await newWebhook(admin)
    const first = await app.inject({
      url: '/api/webhooks?updatedSince=2000-01-01T00:00:00Z&size=1',
      headers: bearer(admin.token),
    })
    const cursor = first.json().data.nextCursor as string
    const [body, signature] = cursor.split('.') as [string, string]
    const forged = `${Buffer.from(
      Buffer.from(body, 'base64url')
        .toString()
        .replace(/"i":\d+/, '"i":0'),
    ).toString('base64url')}.${signature}`
    for (const url of [
      `/api/webhooks?cursor=${forged}`,
      `/api/webhooks?cursor=${cursor}&active=false`,
      `/api/webhooks?cursor=${cursor}&sort=url,asc`,
    ]) {
      const response = await app.inject({ url, headers: bearer(admin.token) })
      expect(response.statusCode, url).toBe(400)
      expect(response.json().error.code).toBe('VAL_001')
    }
    expect(
      (await app.inject({ url: `/api/webhooks?cursor=${cursor}`, headers: bearer(admin.token) })).statusCode,
    ).toBe(200)
  })
})
