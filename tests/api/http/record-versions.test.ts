import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization } from '../../helpers/factories.js'
import { call, type Data, get, KINDS, type Kind, resolveHost } from './versioned-kinds.js'

// GET …/versions (every version, newest first) and …/versions/{version} (one): a record as it was
// at its versions, as the REST read shows the record, for those who may read it now.

let app: App
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-record-versions-'))
  app = await buildTestApp({ DATA_DIR: dataDir }, undefined, { resolveHost })
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

const WITH_VERSION_ROUTES = ['patients', 'appointments', 'encounters', 'invoices', 'messages', 'webhooks']
const rows = KINDS.filter((kind) => WITH_VERSION_ROUTES.includes(kind.name)).map(
  (kind) => [kind.name, kind] as const,
)
const create = async (kind: Kind) => kind.make(await kind.scope(app))

describe('versions of a record', () => {
  it('shows an encounter at each version with the addenda written by then', async () => {
    const [, encounters] = rows.find(([name]) => name === 'encounters') as (typeof rows)[number]
    const subject = await create(encounters)
    for (const [path, payload] of [
      ['/sign', undefined],
      ['/addendum', { text: 'Called back: better' }],
      ['/addendum', { text: 'Seen again' }],
    ] as const) {
      const answer = await call(subject, `${subject.url}${path}`, { method: 'POST', payload })
      expect(answer.statusCode, answer.body).toBe(200)
    }
    const versions: Data[] = []
    for (const version of [1, 2, 3, 4]) {
      const answer = await call(subject, `${subject.url}/versions/${version}`)
      expect(answer.statusCode, answer.body).toBe(200)
      versions.push(answer.json().data)
    }
    expect(versions.map((version) => [version.version, version.status])).toEqual([
      [1, 'DRAFT'],
      [2, 'SIGNED'],
      [3, 'AMENDED'],
      [4, 'AMENDED'],
    ])
    expect(versions.map((version) => (version.addenda as Data[]).map((addendum) => addendum.text))).toEqual([
      [],
      [],
      ['Called back: better'],
      ['Called back: better', 'Seen again'],
    ])
  })

  it.each(rows)('%s: reads each version as it was', async (_name, kind) => {
    const subject = await create(kind)
    const made = subject.created.json().data as Data
    await kind.change(subject)
    const current = (await get(subject)).json().data as Data
    expect(current.version).toBe((made.version as number) + 1)

    // What each version shows is what the record's answers showed at the time (those answers may
    // hold more: a creation's secret, an invoice's payments).
    const first = await call(subject, `${subject.url}/versions/${made.version}`)
    expect(first.statusCode, first.body).toBe(200)
    expect(made).toMatchObject(first.json().data)
    expect(first.headers.etag).toBe(`W/"${made.version}"`)
    const latest = await call(subject, `${subject.url}/versions/${current.version}`)
    expect(current).toMatchObject(latest.json().data)

    const missing = await call(subject, `${subject.url}/versions/99`)
    expect([missing.statusCode, missing.json().error.code]).toEqual([404, 'RES_001'])
  })

  it.each(rows)('%s: lists every version, newest first, in offset pages', async (_name, kind) => {
    const subject = await create(kind)
    const made = subject.created.json().data as Data
    await kind.change(subject)
    const current = (await get(subject)).json().data as Data

    const all = await call(subject, `${subject.url}/versions`)
    expect(all.statusCode, all.body).toBe(200)
    const page = all.json().data
    expect(page.content.map((version: Data) => version.version)).toEqual([current.version, made.version])
    expect(current).toMatchObject(page.content[0])
    expect(made).toMatchObject(page.content[1])
    expect([page.totalElements, page.totalPages, page.first, page.last]).toEqual([2, 1, true, true])

    const second = await call(subject, `${subject.url}/versions?page=1&size=1`)
    expect(second.json().data.content.map((version: Data) => version.version)).toEqual([made.version])
    expect([second.json().data.totalElements, second.json().data.last]).toEqual([2, true])
    const oldest = await call(subject, `${subject.url}/versions?sort=version,asc`)
    expect(oldest.json().data.content.map((version: Data) => version.version)).toEqual([
      made.version,
      current.version,
    ])

    const unknown = await call(subject, `${subject.url}/versions?updatedSince=2020-01-01T00:00:00Z`)
    expect(unknown.statusCode).toBe(400)
  })

  it.each(rows)('%s: another organization’s record is refused, as its read is', async (_name, kind) => {
    const subject = await create(kind)
    const other = await newOrganization(app)
    const user = await other.user(...subject.user.roles)
    const read = await call(subject, subject.url, { user })
    for (const url of [`${subject.url}/versions`, `${subject.url}/versions/1`]) {
      const answer = await call(subject, url, { user })
      expect(answer.statusCode, url).toBe(read.statusCode)
      expect(answer.statusCode, url).toBeGreaterThanOrEqual(403)
    }
  })

  it('is audited as a read of the record, and closed to roles that may not read it', async () => {
    const [, patients] = rows[0] as (typeof rows)[number]
    const subject = await create(patients)
    const requestId = `versions-${subject.id}`
    const answer = await call(subject, `${subject.url}/versions/1`, {
      headers: { 'x-request-id': requestId },
    })
    expect(answer.statusCode).toBe(200)
    const record = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids'])
      .where('organization_id', '=', subject.org.id)
      .where('request_id', '=', requestId)
      .executeTakeFirst()
    expect(record).toEqual({ action: 'READ', resource_type: 'patient', resource_ids: [subject.id] })

    const [, webhooks] = rows.find(([name]) => name === 'webhooks') as (typeof rows)[number]
    const hook = await create(webhooks)
    const nurse = await hook.org.user('NURSE')
    for (const url of [`${hook.url}/versions`, `${hook.url}/versions/1`]) {
      const refused = await call(hook, url, { user: nurse })
      expect([refused.statusCode, refused.json().error.code]).toEqual([403, 'AUTH_003'])
    }
  })
})
