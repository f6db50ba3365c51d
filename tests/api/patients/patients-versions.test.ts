import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { purgeTombstones } from '../../../src/lib/sync-paging.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  type TestUser,
} from '../../helpers/factories.js'
import { expectNoOpWrite } from '../../helpers/no-op-writes.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

async function registrar() {
  const org = await newOrganization(app)
  return { org, nurse: await org.user('NURSE'), admin: await org.user('ADMIN') }
}

const read = (user: TestUser, id: number, headers: Record<string, string> = {}) =>
  app.inject({ url: `/api/patients/${id}`, headers: { ...bearer(user.token), ...headers } })

const put = (user: TestUser, id: number, body: object, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'PUT',
    url: `/api/patients/${id}`,
    headers: { ...bearer(user.token), ...headers },
    payload: body,
  })

const patch = (user: TestUser, id: number, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'PATCH',
    url: `/api/patients/${id}`,
    headers: { ...bearer(user.token), 'content-type': 'application/merge-patch+json', ...headers },
    payload: JSON.stringify(body),
  })

describe('versions and ETags of patients', () => {
  it('returns version 1 and ETag W/"1" on creation, and one more on each change', async () => {
    const { nurse } = await registrar()
    const created = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(nurse.token),
      payload: patientBody(),
    })
    expect(created.statusCode).toBe(201)
    expect(created.headers.etag).toBe('W/"1"')
    const id = created.json().data.id
    expect(created.json().data.version).toBe(1)

    const updated = await put(nurse, id, patientBody())
    expect(updated.statusCode).toBe(200)
    expect(updated.json().data.version).toBe(2)
    expect(updated.headers.etag).toBe('W/"2"')
    const got = await read(nurse, id)
    expect(got.headers.etag).toBe('W/"2"')
  })

  it('answers 304 without a body when If-None-Match names the current version, 200 when stale', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse)
    const notModified = await read(nurse, id, { 'if-none-match': 'W/"1"' })
    expect(notModified.statusCode).toBe(304)
    expect(notModified.body).toBe('')
    expect(notModified.headers.etag).toBe('W/"1"')
    expect((await read(nurse, id, { 'if-none-match': '"7", W/"1"' })).statusCode).toBe(304)
    expect((await read(nurse, id, { 'if-none-match': '*' })).statusCode).toBe(304)

    await put(nurse, id, patientBody())
    const stale = await read(nurse, id, { 'if-none-match': 'W/"1"' })
    expect(stale.statusCode).toBe(200)
    expect(stale.json().data.version).toBe(2)
  })

  it('returns 412 RES_003 with the current version for a stale If-Match on PUT, and changes nothing', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse, patientBody({ preferredLanguage: 'en' }))
    expect(
      (await put(nurse, id, patientBody({ preferredLanguage: 'fr' }), { 'if-match': 'W/"1"' })).statusCode,
    ).toBe(200)
    const stale = await put(nurse, id, patientBody({ preferredLanguage: 'de' }), { 'if-match': 'W/"1"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().error.code).toBe('RES_003')
    expect(stale.json().error.details).toContain('current version is 2')
    const current = (await read(nurse, id)).json().data
    expect(current.preferredLanguage).toBe('fr')
    expect(current.version).toBe(2)
    expect((await put(nurse, id, patientBody(), { 'if-match': '"2"' })).statusCode).toBe(200)
    expect((await put(nurse, id, patientBody(), { 'if-match': '*' })).statusCode).toBe(200)
  })

  it('returns 400 for a malformed If-Match and 404 for an unknown patient with one', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse)
    const malformed = await put(nurse, id, patientBody(), { 'if-match': 'version-1' })
    expect(malformed.statusCode).toBe(400)
    expect(malformed.json().error.code).toBe('VAL_001')
    expect((await put(nurse, 2_000_000_000, patientBody(), { 'if-match': 'W/"1"' })).statusCode).toBe(404)
  })

  it('returns 412 for a stale If-Match on DELETE and keeps the patient', async () => {
    const { nurse, admin } = await registrar()
    const id = await createPatient(app, nurse)
    await put(nurse, id, patientBody())
    const stale = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${id}`,
      headers: { ...bearer(admin.token), 'if-match': 'W/"1"' },
    })
    expect(stale.statusCode).toBe(412)
    expect((await read(nurse, id)).statusCode).toBe(200)
    const current = await app.inject({
      method: 'DELETE',
      url: `/api/patients/${id}`,
      headers: { ...bearer(admin.token), 'if-match': 'W/"2"' },
    })
    expect(current.statusCode).toBe(200)
    expect((await read(nurse, id)).statusCode).toBe(404)
  })
})

describe('PUT and PATCH /api/patients/{id} that change nothing', () => {
  it('returns 200 with the patient at the same version, ETag and updatedAt, and emits no event', async () => {
    const { org, nurse, admin } = await registrar()
    const body = patientBody({ preferredLanguage: 'en' })
    const id = await createPatient(app, nurse, body)
    await expectNoOpWrite(
      app,
      org.id,
      () => read(nurse, id),
      () => put(nurse, id, body),
    )
    await expectNoOpWrite(
      app,
      org.id,
      () => read(nurse, id),
      () => patch(nurse, id, {}),
    )
    // Another writer sending the same values changes nothing either.
    await expectNoOpWrite(
      app,
      org.id,
      () => read(nurse, id),
      () => put(admin, id, body),
    )
    await expectNoOpWrite(
      app,
      org.id,
      () => read(nurse, id),
      () => patch(admin, id, { preferredLanguage: 'en' }),
    )
    const feed = await app.inject({ url: '/api/events', headers: bearer(admin.token) })
    expect(feed.statusCode).toBe(200)
    expect(feed.json().data.events.map((event: { event: string }) => event.event)).toEqual([
      'patient.created',
    ])
  })

  it('still checks If-Match: 412 when stale, 200 when current', async () => {
    const { org, nurse } = await registrar()
    const body = patientBody()
    const id = await createPatient(app, nurse, body)
    expect((await patch(nurse, id, { preferredLanguage: 'fr' })).json().data.version).toBe(2)
    const stalePut = await put(nurse, id, { ...body, preferredLanguage: 'fr' }, { 'if-match': 'W/"1"' })
    expect(stalePut.statusCode).toBe(412)
    expect(stalePut.json().error.code).toBe('RES_003')
    expect((await patch(nurse, id, {}, { 'if-match': 'W/"1"' })).statusCode).toBe(412)
    await expectNoOpWrite(
      app,
      org.id,
      () => read(nurse, id),
      () => patch(nurse, id, {}, { 'if-match': 'W/"2"' }),
    )
    await expectNoOpWrite(
      app,
      org.id,
      () => read(nurse, id),
      () => put(nurse, id, { ...body, preferredLanguage: 'fr' }, { 'if-match': 'W/"2"' }),
    )
  })

  it('records the attempt in the audit log like any update', async () => {
    const { org, nurse } = await registrar()
    const body = patientBody()
    const id = await createPatient(app, nurse, body)
    expect((await put(nurse, id, body)).statusCode).toBe(200)
    const updates = async () => {
      await app.auditLog.flush()
      return app.db
        .selectFrom('audit_log')
        .select(['resource_ids', 'outcome'])
        .where('organization_id', '=', org.id)
        .where('action', '=', 'UPDATE')
        .execute()
    }
    await expect.poll(updates).toEqual([{ resource_ids: [id], outcome: 'SUCCESS' }])
  })

  it('still raises the version, ETag and updatedAt of a real change, with one event', async () => {
    const { org, nurse } = await registrar()
    const body = patientBody()
    const id = await createPatient(app, nurse, body)
    const before = (await read(nurse, id)).json().data
    const changed = await put(nurse, id, { ...body, preferredLanguage: 'es' })
    expect(changed.statusCode).toBe(200)
    expect(changed.headers.etag).toBe('W/"2"')
    expect(changed.json().data.version).toBe(2)
    expect(changed.json().data.updatedAt > before.updatedAt).toBe(true)
    const events = await app.db
      .selectFrom('outbox_events')
      .select('event_type')
      .where('organization_id', '=', org.id)
      .orderBy('id')
      .execute()
    expect(events.map((event) => event.event_type)).toEqual(['patient.created', 'patient.updated'])
  })
})

describe('REQUIRE_IF_MATCH=true', () => {
  it('returns 428 RES_003 for PUT, PATCH and DELETE without If-Match, and accepts them with it', async () => {
    const strict = await buildTestApp({ REQUIRE_IF_MATCH: 'true' })
    try {
      const org = await newOrganization(strict)
      const nurse = await org.user('NURSE')
      const id = await createPatient(strict, nurse)
      const without = await strict.inject({
        method: 'PUT',
        url: `/api/patients/${id}`,
        headers: bearer(nurse.token),
        payload: patientBody(),
      })
      expect(without.statusCode).toBe(428)
      expect(without.json().error.code).toBe('RES_003')
      const patched = await strict.inject({
        method: 'PATCH',
        url: `/api/patients/${id}`,
        headers: bearer(nurse.token),
        payload: { preferredLanguage: 'en' },
      })
      expect(patched.statusCode).toBe(428)
      const admin = await org.user('ADMIN')
      const deleted = await strict.inject({
        method: 'DELETE',
        url: `/api/patients/${id}`,
        headers: bearer(admin.token),
      })
      expect(deleted.statusCode).toBe(428)
      const withHeader = await strict.inject({
        method: 'PATCH',
        url: `/api/patients/${id}`,
        headers: { ...bearer(nurse.token), 'if-match': 'W/"1"' },
        payload: { preferredLanguage: 'en' },
      })
      expect(withHeader.statusCode).toBe(200)
      expect(withHeader.json().data.version).toBe(2)
    } finally {
      await strict.close()
    }
  })
})

describe('PATCH /api/patients/{id}', () => {
  const full = {
    identification: {
      firstName: 'Ada',
      middleName: 'B',
      lastName: 'Lovelace',
      dateOfBirth: '1985-12-10',
      gender: 'Female',
    },
    contact: {
      email: 'ada@example.com',
      phoneNumber: '+44 20 7946 0000',
      address: { street: '12 St James Sq', city: 'London', country: 'GB' },
    },
    emergencyContact: { name: 'Mary', relationship: 'Mother', phoneNumber: '+44 20 7946 0001' },
    preferredLanguage: 'en-GB',
  }

  it('changes only the members sent; null removes one; nested objects merge', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse, full)
    const response = await patch(nurse, id, {
      contact: { email: null, address: { city: 'Bath' } },
      preferredLanguage: null,
      identification: { middleName: null },
    })
    expect(response.statusCode).toBe(200)
    const patient = response.json().data
    expect(patient.version).toBe(2)
    expect(patient.contact).toEqual({
      email: null,
      phoneNumber: '+44 20 7946 0000',
      address: { street: '12 St James Sq', city: 'Bath', state: null, postalCode: null, country: 'GB' },
    })
    expect(patient.preferredLanguage).toBeNull()
    expect(patient.identification).toEqual({
      firstName: 'Ada',
      middleName: null,
      lastName: 'Lovelace',
      dateOfBirth: '1985-12-10',
      gender: 'Female',
    })
    expect(patient.emergencyContact).toEqual(full.emergencyContact)
    expect(patient.mrn).toMatch(/^MRN/)
    expect((await read(nurse, id)).json().data).toEqual(patient)
  })

  it('replaces a nested object removed with null, and an empty patch changes nothing', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse, full)
    const removed = await patch(nurse, id, { emergencyContact: null })
    expect(removed.statusCode).toBe(200)
    expect(removed.json().data.emergencyContact).toBeNull()
    const empty = await patch(nurse, id, {})
    expect(empty.statusCode).toBe(200)
    expect(empty.json().data.contact.email).toBe('ada@example.com')
  })

  it('returns 422 for a read-only or unknown member, or for null on a required one', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse, full)
    for (const body of [
      { id: 5 },
      { version: 9 },
      { createdAt: '2020-01-01T00:00:00Z' },
      { identification: { firstName: null } },
    ]) {
      const response = await patch(nurse, id, body)
      expect(response.statusCode).toBe(422)
      expect(response.json().success).toBe(false)
    }
    expect((await read(nurse, id)).json().data.version).toBe(1)
  })

  it('returns 422 when the merged patient breaks the full schema or a rule, and stores nothing', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse, patientBody())
    // No emergency contact yet: a patch giving only its name leaves it without the required telephone.
    const incomplete = await patch(nurse, id, { emergencyContact: { name: 'Bo' } })
    expect(incomplete.statusCode).toBe(422)
    expect(incomplete.json().error.details).toContain('emergencyContact.phoneNumber')
    const future = await patch(nurse, id, { identification: { dateOfBirth: '2999-01-01' } })
    expect(future.statusCode).toBe(422)
    expect((await read(nurse, id)).json().data.version).toBe(1)
  })

  it('refuses a body that is not a JSON object, and honours If-Match', async () => {
    const { nurse } = await registrar()
    const id = await createPatient(app, nurse)
    expect((await patch(nurse, id, ['not', 'an', 'object'])).statusCode).toBe(422)
    const stale = await patch(nurse, id, { preferredLanguage: 'es' }, { 'if-match': 'W/"3"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().error.details).toContain('current version is 1')
    expect((await patch(nurse, id, { preferredLanguage: 'es' }, { 'if-match': 'W/"1"' })).statusCode).toBe(
      200,
    )
  })

  it('answers 403 for a patient of another organization and 404 for none', async () => {
    const { nurse } = await registrar()
    const other = await registrar()
    const id = await createPatient(app, other.nurse)
    expect((await patch(nurse, id, { preferredLanguage: 'es' })).statusCode).toBe(403)
    expect((await patch(nurse, 2_000_000_000, { preferredLanguage: 'es' })).statusCode).toBe(404)
  })
})

interface SyncItem {
  id: number
  version?: number
  deleted?: true
  updatedAt?: string
}

async function syncWalk(
  user: TestUser,
  start: string,
  size: number,
  between?: (page: number) => Promise<void>,
) {
  const seen: SyncItem[] = []
  let url = `/api/patients?updatedSince=${encodeURIComponent(start)}&size=${size}`
  for (let page = 0; page < 200; page++) {
    const response = await app.inject({ url, headers: bearer(user.token) })
    expect(response.statusCode).toBe(200)
    const data = response.json().data
    expect(data.totalElements).toBeUndefined()
    seen.push(...data.content, ...(data.deleted ?? []))
    if (data.last) return { seen, cursor: data.nextCursor as string }
    await between?.(page)
    url = `/api/patients?cursor=${data.nextCursor}&size=${size}`
  }
  throw new Error('the walk did not end')
}

describe('GET /api/patients with updatedSince and cursor', () => {
  it('walks every patient once while others are created, changed and deleted, with tombstones', async () => {
    const { nurse, admin } = await registrar()
    const start = new Date(Date.now() - 60_000).toISOString()
    const ids: number[] = []
    for (let i = 0; i < 12; i++) ids.push(await createPatient(app, nurse))
    const [changed, deleted] = [ids[1] as number, ids[2] as number]
    const added: number[] = []
    const { seen } = await syncWalk(nurse, start, 3, async (page) => {
      if (page !== 1) return
      await put(nurse, changed, patientBody())
      await app.inject({ method: 'DELETE', url: `/api/patients/${deleted}`, headers: bearer(admin.token) })
      added.push(await createPatient(app, nurse))
    })
    const unchanged = ids.filter((id) => id !== changed && id !== deleted)
    for (const id of unchanged) expect(seen.filter((item) => item.id === id)).toHaveLength(1)
    // Changed after it was read: read again with its new version.
    expect(seen.filter((item) => item.id === changed).map((item) => item.version)).toEqual([1, 2])
    expect(seen.filter((item) => item.id === deleted).at(-1)).toMatchObject({ id: deleted, deleted: true })
    expect(seen.some((item) => item.id === added[0])).toBe(true)
  })

  it('resumes from the last cursor with only what changed since', async () => {
    const { nurse } = await registrar()
    const start = new Date(Date.now() - 60_000).toISOString()
    const first = await createPatient(app, nurse)
    const { seen, cursor } = await syncWalk(nurse, start, 5)
    expect(seen.map((item) => item.id)).toEqual([first])
    const second = await createPatient(app, nurse)
    await put(nurse, first, patientBody())
    const resumed = await app.inject({ url: `/api/patients?cursor=${cursor}`, headers: bearer(nurse.token) })
    expect(resumed.statusCode).toBe(200)
    expect(resumed.json().data.content.map((item: SyncItem) => [item.id, item.version])).toEqual([
      [second, 1],
      [first, 2],
    ])
    expect(resumed.json().data.first).toBe(false)
    expect(resumed.json().data.last).toBe(true)
  })

  it('orders by (updatedAt, id) and applies the filters', async () => {
    const { nurse } = await registrar()
    const start = new Date(Date.now() - 60_000).toISOString()
    const active = await createPatient(app, nurse)
    const inactive = await createPatient(app, nurse, patientBody({ status: 'INACTIVE' }))
    const response = await app.inject({
      url: `/api/patients?updatedSince=${encodeURIComponent(start)}&status=INACTIVE`,
      headers: bearer(nurse.token),
    })
    expect(response.json().data.content.map((item: SyncItem) => item.id)).toEqual([inactive])
    const all = (
      await app.inject({
        url: `/api/patients?updatedSince=${encodeURIComponent(start)}`,
        headers: bearer(nurse.token),
      })
    ).json().data.content as SyncItem[]
    expect(all.map((item) => item.id)).toEqual([active, inactive])
    const times = all.map((item) => item.updatedAt as string)
    expect([...times].sort()).toEqual(times)
  })

  it('returns 400 for a tampered cursor, a cursor from other filters, and cursor with page or sort', async () => {
    const { nurse } = await registrar()
    await createPatient(app, nurse)
    await createPatient(app, nurse)
    const first = await app.inject({
      url: '/api/patients?updatedSince=2000-01-01T00:00:00Z&size=1',
      headers: bearer(nurse.token),
    })
    const cursor = first.json().data.nextCursor as string
    const [body, signature] = cursor.split('.') as [string, string]
    const forged = `${Buffer.from(
      Buffer.from(body, 'base64url')
        .toString()
        .replace(/"i":\d+/, '"i":0'),
    ).toString('base64url')}.${signature}`
    const attempts = [
      `/api/patients?cursor=${forged}`,
      `/api/patients?cursor=${cursor}&status=ACTIVE`,
      `/api/patients?cursor=${cursor}&page=1`,
      `/api/patients?cursor=${cursor}&sort=lastName,asc`,
      `/api/patients?cursor=${cursor}&updatedSince=2000-01-01T00:00:00Z`,
      '/api/patients?updatedSince=yesterday',
      '/api/patients?cursor=not-a-cursor',
    ]
    for (const url of attempts) {
      const response = await app.inject({ url, headers: bearer(nurse.token) })
      expect(response.statusCode, url).toBe(400)
      expect(response.json().error.code).toBe('VAL_001')
    }
    expect(
      (await app.inject({ url: `/api/patients?cursor=${cursor}`, headers: bearer(nurse.token) })).statusCode,
    ).toBe(200)
  })

  it('never shows another organization’s patients or tombstones', async () => {
    const mine = await registrar()
    const theirs = await registrar()
    const start = new Date(Date.now() - 60_000).toISOString()
    const own = await createPatient(app, mine.nurse)
    const foreign = await createPatient(app, theirs.nurse)
    await app.inject({
      method: 'DELETE',
      url: `/api/patients/${foreign}`,
      headers: bearer(theirs.admin.token),
    })
    const { seen } = await syncWalk(mine.nurse, start, 10)
    expect(seen.map((item) => item.id)).toEqual([own])
  })
})

describe('tombstone retention', () => {
  it('purges tombstones older than the retention and keeps the younger ones', async () => {
    const { nurse, admin } = await registrar()
    const ids = [await createPatient(app, nurse), await createPatient(app, nurse)]
    for (const id of ids) {
      await app.inject({ method: 'DELETE', url: `/api/patients/${id}`, headers: bearer(admin.token) })
    }
    const [old, young] = ids as [number, number]
    await app.db
      .updateTable('deleted_records')
      .set({ deleted_at: new Date(Date.now() - 91 * 86_400_000) })
      .where('resource_type', '=', 'patient')
      .where('record_id', '=', old)
      .execute()
    expect(await purgeTombstones(app.db, 90)).toBeGreaterThanOrEqual(1)
    const left = await app.db
      .selectFrom('deleted_records')
      .select('record_id')
      .where('resource_type', '=', 'patient')
      .where('record_id', 'in', ids)
      .execute()
    expect(left.map((row) => row.record_id)).toEqual([young])
    const { seen } = await syncWalk(nurse, '2000-01-01T00:00:00Z', 10)
    expect(seen.map((item) => item.id)).toEqual([young])
  })
})
