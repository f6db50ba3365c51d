import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { recordVersion, recordVersions } from '../../../src/lib/record-history.js'
import { purgeTombstones } from '../../../src/lib/sync-paging.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, daysFromToday } from '../../helpers/factories.js'
import { expectNoOpWrite } from '../../helpers/no-op-writes.js'
import { booked, newPractice, outboxEvents } from '../../helpers/scheduling.js'
import { forgedCursor } from '../../helpers/sync-cursors.js'
import {
  type Answer,
  appointments,
  CLINICAL_KINDS,
  CONDITION,
  call,
  conditions,
  type Data,
  encounters,
  get,
  type Headers,
  HOOK_EVENTS,
  HOOK_URL,
  KINDS,
  type Kind,
  MEASURED_AT,
  MERGE_PATCH,
  made,
  markRead,
  messages,
  NOTE,
  OTHER_URL,
  patch,
  patientScope,
  patients,
  providers,
  resolveHost,
  type Scope,
  type Subject,
  sign,
  tombstone,
  VITALS,
  type Write,
  webhooks,
} from './versioned-kinds.js'

// Every versioned record follows one set of rules: a version and its ETag that go up by one on each
// change, If-None-Match and If-Match (RFC 9110), REQUIRE_IF_MATCH, writes that change nothing,
// merge patches (RFC 7396) and sync pages (`updatedSince`, `cursor`). The cases below run the rules
// over the table of versioned-kinds.ts; the blocks at the end hold what only one kind has.

let app: App
let strictApp: App
const dataDirs: string[] = []

async function appWith(environment: Record<string, string>) {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-versions-'))
  dataDirs.push(dataDir)
  return buildTestApp({ DATA_DIR: dataDir, ...environment }, undefined, { resolveHost })
}

beforeAll(async () => {
  app = await appWith({})
  strictApp = await appWith({ REQUIRE_IF_MATCH: 'true' })
})
afterAll(async () => {
  await app.close()
  await strictApp.close()
  for (const dataDir of dataDirs) await rm(dataDir, { recursive: true, force: true })
})

const weak = (version: number) => `W/"${version}"`
const rows = (kinds: Kind[]) => kinds.map((kind) => [kind.name, kind] as const)
const create = async (kind: Kind, on = app) => kind.make(await kind.scope(on))
/** The version the record had when made. */
const madeAt = (subject: Subject) => subject.created.json().data.version as number

const readList = (kind: Kind, scope: Scope, query: string) =>
  call(scope, `${kind.list.path(scope)}?${[query, kind.list.query].filter(Boolean).join('&')}`, {
    user: kind.list.as === undefined ? undefined : scope.as[kind.list.as],
  })

/** A record in a list page. */
interface Item {
  id: number
  version?: number
  updatedAt?: string
  deleted?: true
}

const ids = (items: Item[]) => items.map((item) => item.id)

/** The record as the API shows it: its read (or else its list entry), whether its list shows it, and what else the kind shows. */
async function stateOf(kind: Kind, subject: Subject): Promise<Data> {
  const listed = await readList(kind, subject, 'size=100')
  expect(listed.statusCode, listed.body).toBe(200)
  const entry = (listed.json().data.content as Data[]).find((item) => item.id === subject.id)
  const read = kind.unread ? undefined : await get(subject)
  if (read) expect(read.statusCode, read.body).toBe(200)
  return {
    ...(read ? read.json().data : entry),
    listed: entry !== undefined,
    ...(await kind.also?.(subject)),
  }
}

// ---- Versions and conditional requests ---------------------------------------------------------

describe('versions and ETags', () => {
  it.each(rows(KINDS))(
    '%s: a new record has its version and ETag, and each change adds one to both',
    async (_name, kind) => {
      const subject = await create(kind)
      const first = madeAt(subject)
      expect(first).toEqual(kind.firstVersion ?? 1)
      expect(subject.created.headers.etag).toBe(weak(first))
      const made = await stateOf(kind, subject)
      expect(made.version).toBe(first)
      // Without a read of its own, the record's list entry is what its creation answered.
      if (kind.unread)
        expect(made).toEqual({
          ...subject.created.json().data,
          ...(await kind.also?.(subject)),
          listed: true,
        })
      else expect((await get(subject)).headers.etag).toBe(weak(first))

      let previous: Answer | undefined
      for (const [index, step] of kind.history.entries()) {
        const version = first + index + 1
        const answer = await step.send(subject, previous)
        if (answer) expect(answer.statusCode, `${step.name}: ${answer.body}`).toBe(step.status ?? 200)
        if (answer && !step.other) {
          expect(answer.json().data.version, step.name).toBe(version)
          expect(answer.headers.etag, step.name).toBe(weak(version))
        }
        const state = await stateOf(kind, subject)
        expect(state.version, step.name).toBe(version)
        step.check?.(answer, state)
        previous = answer
      }
      if (!kind.unread) expect((await get(subject)).headers.etag).toBe(weak(first + kind.history.length))
      // Every version the changes replaced is kept (those before the answer to its creation too, as
      // for a document's upload), newest first, with the current one.
      const last = first + kind.history.length
      const kept = await recordVersions(subject.on.db, subject.org.id, kind.table, subject.id, {
        page: 0,
        size: 100,
      })
      expect(kept.rows.map((row) => [row.version, row.replaced_at === null, row.removed])).toEqual(
        Array.from({ length: last }, (_, index) => [last - index, index === 0, false]),
      )
      expect(kept.total).toBe(last)
    },
  )
})

describe('versions kept', () => {
  it.each(rows(KINDS.filter((kind) => kind.end)))(
    '%s: the record’s end keeps its last version; a removed record’s is marked removed',
    async (_name, kind) => {
      const subject = await create(kind)
      const first = madeAt(subject)
      await kind.end?.send(subject)
      const kept = await recordVersions(subject.on.db, subject.org.id, kind.table, subject.id, {
        page: 0,
        size: 100,
      })
      const [newest] = kept.rows
      const removed = await subject.on.db
        .selectFrom(kind.table)
        .select('id')
        .where('organization_id', '=', subject.org.id)
        .where('id', '=', subject.id)
        .executeTakeFirst()
        .then((row) => row === undefined)
      // Removed: its last version is the one kept, marked so; otherwise the current row ends it.
      expect([newest?.version, newest?.removed, newest?.replaced_at === null]).toEqual(
        removed ? [first, true, false] : [first + 1, false, true],
      )
      expect(kept.rows.map((row) => row.version)).toEqual(
        Array.from({ length: newest?.version ?? 0 }, (_, index) => (newest?.version ?? 0) - index),
      )
    },
  )

  it('reads one version back as a row of its table, whatever changed since', async () => {
    const subject = await create(patients)
    await call(subject, subject.url, {
      method: 'PATCH',
      payload: { preferredLanguage: 'fr' },
      headers: MERGE_PATCH,
    })
    const { on, org, id } = subject
    const [older, newer] = await Promise.all([
      recordVersion(on.db, org.id, 'patients', id, 1),
      recordVersion(on.db, org.id, 'patients', id, 2),
    ])
    expect([older?.preferred_language, newer?.preferred_language]).toEqual([
      subject.created.json().data.preferredLanguage,
      'fr',
    ])
    expect(older?.created_at).toBeInstanceOf(Date)
    expect(older?.created_at.getTime()).toBe(newer?.created_at.getTime())
    expect(older?.replaced_at).toBeInstanceOf(Date)
    expect(await recordVersion(on.db, org.id, 'patients', id, 3)).toBeUndefined()
    // Another organization's id gives nothing.
    expect(await recordVersion(on.db, org.id + 1, 'patients', id, 1)).toBeUndefined()
  })

  it('keeps no signing secret of a webhook’s earlier versions', async () => {
    const subject = await create(webhooks)
    await call(subject, `${subject.url}/rotate-secret`, { method: 'POST', payload: {} })
    const { on, org, id } = subject
    const [kept, current] = await Promise.all([
      recordVersion(on.db, org.id, 'webhooks', id, 1),
      recordVersion(on.db, org.id, 'webhooks', id, 2),
    ])
    expect([kept?.url, kept?.secret, kept?.previous_secret]).toEqual([HOOK_URL, null, null])
    expect([typeof current?.secret, typeof current?.previous_secret]).toEqual(['string', 'string'])
  })
})

describe('If-None-Match', () => {
  it.each(rows(KINDS.filter((kind) => !kind.unread)))(
    '%s: 304 without a body while it names the current version, 200 once the record changed',
    async (_name, kind) => {
      const subject = await create(kind)
      const notModified = await get(subject, { 'if-none-match': 'W/"1"' })
      expect(notModified.statusCode).toBe(304)
      expect(notModified.body).toBe('')
      expect(notModified.headers.etag).toBe('W/"1"')
      expect((await get(subject, { 'if-none-match': '"7", W/"1"' })).statusCode).toBe(304)
      expect((await get(subject, { 'if-none-match': '*' })).statusCode).toBe(304)

      await kind.change(subject)
      const stale = await get(subject, { 'if-none-match': 'W/"1"' })
      expect(stale.statusCode).toBe(200)
      expect(stale.json().data).toMatchObject({ ...kind.changed, version: 2 })
    },
  )
})

describe('If-Match', () => {
  it.each(rows(KINDS))(
    '%s: 412 RES_003 with the current version for a stale or unknown version, changing nothing; the current one goes through',
    async (_name, kind) => {
      for (const write of kind.writes) {
        const subject = await create(kind)
        const before = write.before === undefined ? kind.change : write.before
        await before?.(subject)
        const state = await stateOf(kind, subject)
        const version = state.version as number
        const tags = [weak(version + 5), ...(version > madeAt(subject) ? [weak(version - 1)] : [])]
        for (const tag of tags) {
          const refused = await write.send(subject, { 'if-match': tag })
          expect(refused.statusCode, `${write.name} ${tag}: ${refused.body}`).toBe(412)
          expect(refused.json()).toMatchObject({ success: false, error: { code: 'RES_003' } })
          expect(refused.json().error.details).toContain(
            `current version is ${version} (ETag ${weak(version)})`,
          )
          expect(await stateOf(kind, subject), `${write.name} ${tag}`).toEqual(state)
        }
        // The ETag's opaque part alone (a strong tag) names the same version.
        const accepted = await write.send(subject, { 'if-match': `"${version}"` })
        expect(accepted.statusCode, `${write.name}: ${accepted.body}`).toBe(write.status ?? 200)
        const data = accepted.json().data
        if (typeof data.version === 'number' && !write.deletes) {
          expect(data.version, write.name).toBe(version + 1)
          expect(accepted.headers.etag, write.name).toBe(weak(version + 1))
        }
        write.check?.(accepted, subject)
        if (write.repeatable) expect((await write.send(subject, { 'if-match': '*' })).statusCode).toBe(200)
        if (write.deletes) {
          const listed = await readList(kind, subject, 'size=100')
          expect(ids(listed.json().data.content)).not.toContain(subject.id)
          if (!kind.unread) expect((await get(subject)).statusCode).toBe(404)
          const again = await write.send(subject, { 'if-match': weak(version) })
          expect(again.statusCode, write.name).toBe(404)
        }
      }
    },
  )

  it.each(rows(KINDS))(
    '%s: 400 for a malformed If-Match; 404 for no such record; another organization’s refused, If-Match or not',
    async (_name, kind) => {
      const subject = await create(kind)
      const missing = { ...subject, url: subject.url.replace(/\/\d+$/, '/2000000000') }
      const stranger = await kind.scope(app)
      const foreign = { ...subject, user: stranger.user, as: stranger.as }
      // Writes that need a record prepared first (signed, with an exception) are left out.
      for (const write of kind.writes.filter((candidate) => typeof candidate.before !== 'function')) {
        const malformed = await write.send(subject, { 'if-match': 'version-1' })
        expect(malformed.statusCode, write.name).toBe(400)
        expect(malformed.json().error.code).toBe('VAL_001')
        expect((await write.send(missing, { 'if-match': 'W/"1"' })).statusCode, write.name).toBe(404)
        for (const headers of [{ 'if-match': 'W/"1"' }, {}] as Headers[])
          expect((await write.send(foreign, headers)).statusCode, write.name).toBe(kind.foreign ?? 403)
      }
      expect((await stateOf(kind, subject)).version).toBe(madeAt(subject))
    },
  )

  it('conditions: 404 for a record of another patient, even with If-Match', async () => {
    const subject = await create(conditions)
    const otherPatient = await createPatient(app, subject.user)
    const response = await call(subject, `/api/patients/${otherPatient}/conditions/${subject.id}`, {
      method: 'PUT',
      payload: CONDITION,
      headers: { 'if-match': 'W/"1"' },
    })
    expect(response.statusCode).toBe(404)
  })
})

describe('REQUIRE_IF_MATCH=true', () => {
  it.each(rows(KINDS))(
    '%s: 428 RES_003 for every conditional write without If-Match, changing nothing; accepted with it',
    async (_name, kind) => {
      const subject = await create(kind, strictApp)
      for (const write of kind.writes) {
        await write.before?.(subject)
        const state = await stateOf(kind, subject)
        const refused = await write.send(subject)
        expect(refused.statusCode, `${write.name}: ${refused.body}`).toBe(428)
        expect(refused.json().error.code).toBe('RES_003')
        expect(await stateOf(kind, subject), write.name).toEqual(state)
      }
      const fresh = await create(kind, strictApp)
      const [write] = kind.writes as [Write]
      const accepted = await write.send(fresh, { 'if-match': weak(madeAt(fresh)) })
      expect(accepted.statusCode, accepted.body).toBe(write.status ?? 200)
      if (!write.deletes) expect(accepted.json().data.version).toBe(madeAt(fresh) + 1)
    },
  )
})

// ---- Writes that change nothing ----------------------------------------------------------------

const WITH_NO_OPS = [patients, ...CLINICAL_KINDS, encounters, providers, appointments, webhooks]

describe('PUT and PATCH that change nothing', () => {
  it.each(rows(WITH_NO_OPS))(
    '%s: keep the version, ETag and updatedAt and emit nothing; If-Match is still checked; a real change still counts',
    async (_name, kind) => {
      const subject = await create(kind)
      const noOps = kind.noOps ?? []
      const read = () => get(subject)
      for (const noOp of noOps) {
        await expectNoOpWrite(app, subject.org.id, read, () => noOp.send(subject))
        await expectNoOpWrite(app, subject.org.id, read, () => noOp.send(subject, { 'if-match': 'W/"1"' }))
        const stale = await noOp.send(subject, { 'if-match': 'W/"2"' })
        expect(stale.statusCode, noOp.name).toBe(412)
        expect(stale.json().error.code).toBe('RES_003')
      }
      const before = (await read()).json().data
      await kind.change(subject)
      const changed = await read()
      expect(changed.headers.etag).toBe('W/"2"')
      expect(changed.json().data.version).toBe(2)
      expect(changed.json().data.updatedAt > before.updatedAt).toBe(true)
      if (kind.events) {
        const events = await outboxEvents(app, subject.org.id)
        expect(events.map((event) => event.event_type)).toEqual(kind.events)
      }
      // A changed record sent again as it now is changes nothing either; a stale If-Match is refused.
      for (const noOp of noOps.filter((candidate) => candidate.always)) {
        await expectNoOpWrite(app, subject.org.id, read, () => noOp.send(subject))
        await expectNoOpWrite(app, subject.org.id, read, () => noOp.send(subject, { 'if-match': 'W/"2"' }))
        expect((await noOp.send(subject, { 'if-match': 'W/"1"' })).statusCode, noOp.name).toBe(412)
      }
    },
  )
})

// ---- Merge patches -----------------------------------------------------------------------------

describe('PATCH refused', () => {
  it.each(rows(KINDS.filter((kind) => kind.badPatches)))(
    '%s: 422 for read-only or unknown members, null on a required one, a body not an object, or a merged record that breaks a rule; nothing stored',
    async (_name, kind) => {
      const subject = await create(kind)
      const state = await stateOf(kind, subject)
      for (const [body, names] of kind.badPatches?.(subject) ?? []) {
        const response = await call(subject, subject.url, {
          method: 'PATCH',
          payload: body,
          headers: MERGE_PATCH,
        })
        expect(response.statusCode, JSON.stringify(body)).toBe(422)
        expect(response.json().success).toBe(false)
        if (names) expect(response.json().error.details).toContain(names)
      }
      expect(await stateOf(kind, subject)).toEqual(state)
    },
  )
})

// ---- Sync pages --------------------------------------------------------------------------------

/** Reads sync pages from `from` (updatedSince=… or cursor=…) to the last one. */
async function walk(
  kind: Kind,
  scope: Scope,
  from: string,
  size: number,
  between?: (page: number) => Promise<void>,
) {
  const content: Item[] = []
  const deleted: Item[] = []
  const pages: Data[] = []
  let query = `${from}&size=${size}`
  for (let page = 0; page < 100; page++) {
    const response = await readList(kind, scope, query)
    expect(response.statusCode, `${query}: ${response.body}`).toBe(200)
    const data = response.json().data
    expect(data.totalElements).toBeUndefined()
    expect(data.nextCursor).toEqual(expect.any(String))
    pages.push(data)
    content.push(...data.content)
    deleted.push(...(data.deleted ?? []))
    if (data.last) {
      expectInOrder(content)
      return { content, deleted, pages, cursor: data.nextCursor as string }
    }
    await between?.(page)
    query = `cursor=${encodeURIComponent(data.nextCursor)}&size=${size}${from.replace(/^(updatedSince|cursor)=[^&]*/, '')}`
  }
  throw new Error('the walk did not end')
}

/** Sync pages come in (updatedAt, id) order, each position once. */
function expectInOrder(items: Item[]) {
  const positions = items.map((item) => `${item.updatedAt}|${String(item.id).padStart(10, '0')}`)
  expect([...new Set(positions)].sort()).toEqual(positions)
}

const since = (start = new Date(Date.now() - 60_000)) =>
  `updatedSince=${encodeURIComponent(start.toISOString())}`

describe('sync pages (updatedSince and cursor)', () => {
  it.each(rows(KINDS))(
    '%s: each record once in (updatedAt, id) order; one changed during the walk comes again, one made comes, one ended shows so',
    async (_name, kind) => {
      const start = since()
      const first = await create(kind)
      const records = [first]
      for (let i = 0; i < 6; i++) records.push(await kind.make(first))
      const [changed, ended] = records as [Subject, Subject]
      let added: Subject | undefined
      const { content, deleted, pages } = await walk(kind, first, start, 2, async (page) => {
        if (page !== 0) return
        await kind.change(changed)
        await kind.end?.send(ended)
        added = await kind.make(first)
      })
      expect(pages[0]).toMatchObject({ first: true, last: false, pageable: { pageNumber: 0, pageSize: 2 } })
      expect(pages.slice(1).every((page) => page.first === false)).toBe(true)
      const endedVersion = madeAt(ended) + 1
      const endShown = kind.end?.shows(ended, endedVersion)
      const endIsTombstone = kind.end !== undefined && kind.end.shows === tombstone
      expect(ids(content)).toEqual([
        ...ids(records),
        changed.id,
        ...(kind.end && !endIsTombstone ? [ended.id] : []),
        added?.id,
      ])
      expect(content.filter((item) => item.id === changed.id).map((item) => item.version)).toEqual([
        madeAt(changed),
        madeAt(changed) + 1,
      ])
      if (kind.end && !endIsTombstone) expect(content.at(-2)).toEqual(endShown)
      expect(deleted).toEqual(endIsTombstone ? [endShown] : [])
    },
  )

  it.each(rows(KINDS))('%s: pages of every size read each record once', async (_name, kind) => {
    const start = since()
    const first = await create(kind)
    const records = [first, await kind.make(first), await kind.make(first), await kind.make(first)]
    for (const size of [1, 3, 4, 10]) {
      const { content } = await walk(kind, first, start, size)
      expect(ids(content), `size ${size}`).toEqual(ids(records))
    }
  })

  it.each(rows(KINDS))(
    '%s: the last cursor reads an empty page, then only what changed since',
    async (_name, kind) => {
      const subject = await create(kind)
      const { content, cursor } = await walk(kind, subject, since(), 5)
      expect(ids(content)).toEqual([subject.id])
      const idle = await readList(kind, subject, `cursor=${encodeURIComponent(cursor)}`)
      expect(idle.statusCode).toBe(200)
      expect(idle.json().data).toMatchObject({ content: [], first: false, last: true })
      const second = await kind.make(subject)
      await kind.change(subject)
      const resumed = await readList(
        kind,
        subject,
        `cursor=${encodeURIComponent(idle.json().data.nextCursor)}`,
      )
      expect(resumed.statusCode).toBe(200)
      expect(resumed.json().data.content.map((item: Item) => [item.id, item.version])).toEqual([
        [second.id, madeAt(second)],
        [subject.id, madeAt(subject) + 1],
      ])
      expect(resumed.json().data).toMatchObject({ first: false, last: true })
    },
  )

  it.each(rows(KINDS))(
    '%s: keeps to the list and its filters: other organizations’ records and tombstones, and other lists’, stay out',
    async (_name, kind) => {
      const start = since()
      const mine = await create(kind)
      const theirs = await create(kind)
      await kind.end?.send(theirs)
      const elsewhere = kind.elsewhere ? await kind.make(await kind.elsewhere(mine)) : undefined
      const own = await walk(kind, mine, start, 10)
      expect(ids(own.content)).toEqual([mine.id])
      expect(own.deleted).toEqual([])
      if (elsewhere && kind.end) {
        await kind.end.send(elsewhere)
        const other = await walk(kind, elsewhere, start, 10)
        expect([...other.content, ...other.deleted]).toEqual([
          kind.end.shows(elsewhere, madeAt(elsewhere) + 1),
        ])
      }
      if (kind.filter) {
        const outside = await kind.filter.outside(mine)
        const filtered = await walk(kind, mine, `${start}&${kind.filter.query(mine)}`, 10)
        expect(ids(filtered.content)).toEqual([mine.id])
        expect(ids((await walk(kind, mine, start, 10)).content)).toEqual([mine.id, outside.id])
      }
    },
  )

  it.each(rows(KINDS))(
    '%s: 400 VAL_001 for a forged or tampered cursor, one sent with other filters, page or sort, and a bad updatedSince',
    async (_name, kind) => {
      const subject = await create(kind)
      const second = await kind.make(subject)
      const filters = kind.filter ? `&${kind.filter.query(subject)}` : ''
      const firstPage = await readList(kind, subject, `updatedSince=2000-01-01T00:00:00Z&size=1${filters}`)
      const cursor = firstPage.json().data.nextCursor as string
      const [body, signature] = cursor.split('.') as [string, string]
      const at = (value: string) => `cursor=${encodeURIComponent(value)}`
      const refused = [
        `${at(forgedCursor(cursor))}${filters}`,
        `${at(`${body}.${signature.slice(1)}x`)}${filters}`,
        `${at(cursor)}&${kind.list.otherFilter}`,
        ...(filters ? [at(cursor)] : []),
        `${at(cursor)}${filters}&page=1`,
        `${at(cursor)}${filters}&sort=${kind.list.sort}`,
        `${at(cursor)}${filters}&updatedSince=2000-01-01T00:00:00Z`,
        'updatedSince=2000-01-01T00:00:00Z&page=1',
        'updatedSince=yesterday',
        'cursor=not-a-cursor',
      ]
      for (const query of refused) {
        const response = await readList(kind, subject, query)
        expect(response.statusCode, query).toBe(400)
        expect(response.json().error.code).toBe('VAL_001')
      }
      // The cursor is bound to its list: another patient's refuses it.
      if (kind.elsewhere) {
        const elsewhere = await kind.elsewhere(subject)
        expect((await readList(kind, elsewhere, `${at(cursor)}${filters}`)).statusCode).toBe(400)
      }
      const same = await readList(kind, subject, `${at(cursor)}${filters}&size=1`)
      expect(same.statusCode).toBe(200)
      expect(ids(same.json().data.content)).toEqual([second.id])
    },
  )
})

// ---- What one kind has alone -------------------------------------------------------------------

describe('patients', () => {
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
  const patientWith = async (body: Data) => made(await patients.scope(app), '/api/patients', body)

  it('records a PUT that changes nothing in the audit log like any update; the change feed holds only the creation', async () => {
    const subject = await create(patients)
    expect((await call(subject, subject.url, { method: 'PUT', payload: subject.body })).statusCode).toBe(200)
    const updates = async () => {
      await app.auditLog.flush()
      return app.db
        .selectFrom('audit_log')
        .select(['resource_ids', 'outcome'])
        .where('organization_id', '=', subject.org.id)
        .where('action', '=', 'UPDATE')
        .execute()
    }
    await expect.poll(updates).toEqual([{ resource_ids: [subject.id], outcome: 'SUCCESS' }])
    const feed = await call(subject, '/api/events', { user: subject.as.admin })
    expect(feed.statusCode).toBe(200)
    expect(feed.json().data.events.map((event: { event: string }) => event.event)).toEqual([
      'patient.created',
    ])
  })

  it('PATCH changes only the members sent; null removes one; nested objects merge', async () => {
    const subject = await patientWith(full)
    const response = await patch({
      contact: { email: null, address: { city: 'Bath' } },
      preferredLanguage: null,
      identification: { middleName: null },
    })(subject)
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
    expect((await get(subject)).json().data).toEqual(patient)
  })

  it('PATCH replaces a nested object removed with null, and an empty patch changes nothing', async () => {
    const subject = await patientWith(full)
    const removed = await patch({ emergencyContact: null })(subject)
    expect(removed.statusCode).toBe(200)
    expect(removed.json().data.emergencyContact).toBeNull()
    const empty = await patch({})(subject)
    expect(empty.statusCode).toBe(200)
    expect(empty.json().data.contact.email).toBe('ada@example.com')
  })

  it('purges tombstones older than the retention and keeps the younger ones', async () => {
    const old = await create(patients)
    const young = await patients.make(old)
    for (const subject of [old, young]) await patients.end?.send(subject)
    await app.db
      .updateTable('deleted_records')
      .set({ deleted_at: new Date(Date.now() - 91 * 86_400_000) })
      .where('resource_type', '=', 'patient')
      .where('record_id', '=', old.id)
      .execute()
    expect(await purgeTombstones(app.db, 90)).toBeGreaterThanOrEqual(1)
    const left = await app.db
      .selectFrom('deleted_records')
      .select('record_id')
      .where('resource_type', '=', 'patient')
      .where('record_id', 'in', [old.id, young.id])
      .execute()
    expect(left.map((row) => row.record_id)).toEqual([young.id])
    const { content, deleted } = await walk(patients, old, 'updatedSince=2000-01-01T00:00:00Z', 10)
    expect(content).toEqual([])
    expect(ids(deleted)).toEqual([young.id])
  })
})

describe('clinical records', () => {
  it('PATCH changes only the members sent and removes an optional one with null', async () => {
    const subject = await create(conditions)
    const response = await patch({
      note: null,
      clinicalStatus: 'RESOLVED',
      abatementDate: '2024-01-02',
    })(subject)
    expect(response.statusCode).toBe(200)
    const record = response.json().data
    expect(record).toMatchObject({
      icd10Code: 'E11.9',
      description: 'Type 2 diabetes mellitus',
      onsetDate: '2019-04-01',
      severity: 'MODERATE',
      note: null,
      clinicalStatus: 'RESOLVED',
      abatementDate: '2024-01-02',
      version: 2,
    })
    expect(response.headers.etag).toBe('W/"2"')
    expect((await get(subject)).json().data).toEqual(record)
  })

  it('PATCH merges nested objects and replaces arrays', async () => {
    const scope = await conditions.scope(app)
    const subject = await made(scope, `/api/patients/${scope.related.patientId}/allergies`, {
      substance: 'Penicillin',
      substanceCode: { system: 'RXNORM', code: '7980' },
      category: 'MEDICATION',
      reactions: [{ manifestation: 'Hives', severity: 'MILD' }, { manifestation: 'Itching' }],
      severity: 'MODERATE',
    })
    const response = await patch({
      substanceCode: { code: '7981' },
      reactions: [{ manifestation: 'Anaphylaxis', severity: 'SEVERE' }],
    })(subject)
    expect(response.statusCode).toBe(200)
    const allergy = response.json().data
    expect(allergy.substanceCode).toEqual({ system: 'RXNORM', code: '7981' })
    expect(allergy.reactions).toEqual([{ manifestation: 'Anaphylaxis', severity: 'SEVERE' }])
    expect(allergy).toMatchObject({ substance: 'Penicillin', severity: 'MODERATE', status: 'ACTIVE' })
  })

  it('PATCH keeps what vital signs were measured and when, converting nothing twice', async () => {
    const scope = await patientScope(app, 'NURSE')
    const subject = await made(scope, `/api/patients/${scope.related.patientId}/vitals`, VITALS)
    const doctor = await scope.org.user('PROVIDER')
    const response = await call(subject, subject.url, {
      method: 'PATCH',
      payload: { weightKg: 90, systolic: null },
      headers: MERGE_PATCH,
      user: doctor,
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({
      status: 'AMENDED',
      systolic: null,
      diastolic: 80,
      temperatureCelsius: 37,
      heightCm: 180,
      weightKg: 90,
      bmi: 27.8,
      version: 2,
    })
    const stored = await app.db
      .selectFrom('clinical_records')
      .select('effective_at')
      .where('id', '=', subject.id)
      .executeTakeFirstOrThrow()
    expect(stored.effective_at.toISOString()).toBe(MEASURED_AT)
  })

  it('PATCH refuses a withdrawn record with 409', async () => {
    const subject = await create(conditions)
    await conditions.end?.send(subject)
    expect((await patch({ note: 'y' })(subject)).statusCode).toBe(409)
  })

  it('PATCH is refused to a nurse for a kind only providers write', async () => {
    const subject = await create(conditions)
    const nurse = await subject.org.user('NURSE')
    const response = await call(subject, subject.url, {
      method: 'PATCH',
      payload: { note: 'x' },
      user: nurse,
    })
    expect(response.statusCode).toBe(403)
  })
})

describe('encounters', () => {
  it('PATCH merges nested members, removes those sent as null, replaces arrays and keeps the rest', async () => {
    const subject = await create(encounters)
    const response = await patch({
      chiefComplaint: null,
      soapNote: {
        plan: null,
        assessment: { diagnoses: [{ icd10Code: 'R51.9', description: 'Headache, unspecified' }] },
      },
    })(subject, { 'if-match': 'W/"1"' })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers.etag).toBe('W/"2"')
    expect(response.json().data).toMatchObject({
      encounterDate: NOTE.encounterDate,
      encounterType: 'OFFICE_VISIT',
      chiefComplaint: null,
      soapNote: {
        subjective: 'Headache for three days',
        objective: 'BP 128/82',
        assessment: {
          text: 'Tension-type headache',
          diagnoses: [{ icd10Code: 'R51.9', description: 'Headache, unspecified' }],
        },
        plan: null,
      },
      status: 'DRAFT',
      version: 2,
    })
  })

  it('PATCH refuses a signed encounter with 409', async () => {
    const subject = await create(encounters)
    await sign(subject)
    expect((await patch({ chiefComplaint: 'x' })(subject)).statusCode).toBe(409)
  })
})

describe('providers', () => {
  it('PATCH changes the members sent, removes those sent as null and keeps the rest', async () => {
    const { admin, provider } = await newPractice(app, {
      email: 'grace@example.org',
      phoneNumber: '+1 555 010 1234',
    })
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/providers/${provider.id}`,
      headers: { ...bearer(admin.token), ...MERGE_PATCH, 'if-match': 'W/"1"' },
      payload: { specialty: 'Cardiology', email: null },
    })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers.etag).toBe('W/"2"')
    expect(response.json().data).toMatchObject({
      specialty: 'Cardiology',
      email: null,
      phoneNumber: '+1 555 010 1234',
      firstName: 'Grace',
      title: 'MD',
      slotMinutes: 30,
      version: 2,
    })
    expect(response.json().data.weeklyHours).toHaveLength(7)
  })
})

describe('appointments', () => {
  const DATE = daysFromToday(7)

  async function appointment(extra: object = {}) {
    const practice = await newPractice(app)
    const booking = await booked(app, practice, DATE, '10:00:00', extra)
    const url = `/api/appointments/${booking.id}`
    const send = (payload: object, headers: Headers = {}) =>
      app.inject({
        method: 'PATCH',
        url,
        headers: { ...bearer(practice.nurse.token), ...MERGE_PATCH, ...headers },
        payload,
      })
    return { practice, url, patch: send }
  }

  it('PATCH changes the members sent, clears one sent as null and keeps the rest', async () => {
    const { patch } = await appointment({ reason: 'Check-up', notes: 'Fasting' })
    const response = await patch({ notes: null, priority: 'URGENT' }, { 'if-match': 'W/"1"' })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.headers.etag).toBe('W/"2"')
    expect(response.json().data).toMatchObject({
      notes: null,
      priority: 'URGENT',
      reason: 'Check-up',
      appointmentTime: '10:00:00',
      status: 'SCHEDULED',
      version: 2,
    })
  })

  it('PATCH reschedules and changes status under the PUT rules', async () => {
    const { patch } = await appointment()
    const moved = await patch({ appointmentTime: '14:00:00', status: 'CONFIRMED' })
    expect(moved.statusCode, moved.body).toBe(200)
    expect(moved.json().data).toMatchObject({ appointmentTime: '14:00:00', status: 'CONFIRMED' })
    expect((await patch({ status: 'COMPLETED' })).statusCode).toBe(409)
    expect((await patch({ status: 'CANCELLED' })).statusCode).toBe(422)
  })

  it('PATCH edits the notes of a cancelled appointment without touching its status', async () => {
    const { practice, url, patch } = await appointment()
    await app.inject({ method: 'POST', url: `${url}/cancel`, headers: bearer(practice.nurse.token) })
    const response = await patch({ notes: 'Called back' })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data).toMatchObject({ status: 'CANCELLED', notes: 'Called back', version: 3 })
  })
})

describe('webhooks', () => {
  it('PATCH changes only the members sent; events are replaced whole', async () => {
    const subject = await create(webhooks)
    const paused = await patch({ active: false })(subject)
    expect(paused.statusCode).toBe(200)
    expect(paused.json().data).toMatchObject({
      url: HOOK_URL,
      events: HOOK_EVENTS,
      active: false,
      deactivationReason: 'MANUAL',
      version: 2,
    })
    const replaced = await patch({ events: ['invoice.created'] })(subject)
    expect(replaced.json().data).toMatchObject({ events: ['invoice.created'], active: false, url: HOOK_URL })
    expect((await get(subject)).json().data).toEqual(replaced.json().data)
  })

  it('PATCH leaves the active flag as it is when the patch removes it with null', async () => {
    const subject = await create(webhooks)
    await patch({ active: false })(subject)
    const response = await patch({ active: null, url: OTHER_URL })(subject)
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ url: OTHER_URL, active: false })
  })
})

describe('messages', () => {
  it('a new message was last updated when it was sent; being read again changes nothing', async () => {
    const subject = await create(messages)
    expect(subject.created.json().data.updatedAt).toBe(subject.created.json().data.createdAt)
    await markRead(subject)
    await expectNoOpWrite(
      app,
      subject.org.id,
      () => get(subject),
      () => markRead(subject),
    )
  })

  it('may be marked read by its recipient alone (403 for the sender); the sender’s sent folder sees the read', async () => {
    const start = since()
    const subject = await create(messages)
    const other = await messages.make(subject)
    expect((await markRead(subject, { 'if-match': 'W/"1"' }, subject.user)).statusCode).toBe(403)
    await markRead(subject)
    const sent = await walk(
      { ...messages, list: { ...messages.list, query: 'folder=sent', as: undefined } },
      subject,
      start,
      10,
    )
    expect(sent.content.map((item) => [item.id, item.version])).toEqual([
      [other.id, 1],
      [subject.id, 2],
    ])
  })
})
