import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { multipart } from '../../helpers/multipart.js'

let app: App
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-document-versions-'))
  app = await buildTestApp({ DATA_DIR: dataDir })
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

interface ListedDocument {
  id: number
  title: string
  version: number
  updatedAt: string
  deleted?: true
}

function upload(
  user: TestUser,
  patientId: number,
  title = 'Lab report',
  category = 'LAB_REPORT',
  target: App = app,
) {
  const body = multipart([
    ['title', title],
    ['category', category],
    { fileName: 'report.txt', contentType: 'text/plain', content: Buffer.from(`${title}\n`) },
  ])
  return target.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/documents`,
    headers: { ...bearer(user.token), ...body.headers },
    payload: body.payload,
  })
}

async function uploaded(user: TestUser, patientId: number, title?: string, category?: string) {
  const response = await upload(user, patientId, title, category)
  expect(response.statusCode).toBe(201)
  return response.json().data as ListedDocument
}

const list = (user: TestUser, patientId: number, query = '') =>
  app.inject({ url: `/api/patients/${patientId}/documents${query}`, headers: bearer(user.token) })

const remove = (user: TestUser, id: number, headers: Record<string, string> = {}, target: App = app) =>
  target.inject({
    method: 'DELETE',
    url: `/api/documents/${id}`,
    headers: { ...bearer(user.token), ...headers },
  })

/** A change of the document's row outside the API (there is no metadata update route): the database raises the version. */
const retitle = (id: number, title: string) =>
  app.db.updateTable('documents').set({ title }).where('id', '=', id).execute()

/** Reads sync pages from `start` until the last one: every item in order and the cursor to go on from. */
async function walk(user: TestUser, patientId: number, start: string, size = 2) {
  const items: ListedDocument[] = []
  let query = `?${start}&size=${size}`
  for (let pages = 0; pages < 50; pages++) {
    const response = await list(user, patientId, query)
    expect(response.statusCode).toBe(200)
    const page = response.json().data
    items.push(...page.content, ...(page.deleted ?? []))
    expect(page.nextCursor).toEqual(expect.any(String))
    expect(page).not.toHaveProperty('totalElements')
    if (page.last) return { items, cursor: page.nextCursor as string }
    query = `?cursor=${encodeURIComponent(page.nextCursor)}&size=${size}`
  }
  throw new Error('the walk did not end')
}

async function practice() {
  const organization = await newOrganization(app)
  const provider = await organization.user('PROVIDER')
  const patientId = await createPatient(app, provider)
  return { organization, provider, patientId }
}

describe('document versions', () => {
  it('returns 201 with the version and its ETag on upload, and the version in lists', async () => {
    const { provider, patientId } = await practice()
    const response = await upload(provider, patientId)
    expect(response.statusCode).toBe(201)
    const document = response.json().data
    expect(document.version).toEqual(expect.any(Number))
    expect(response.headers.etag).toBe(`W/"${document.version}"`)
    expect(document.updatedAt).toEqual(expect.any(String))

    const listed = await list(provider, patientId)
    expect(listed.statusCode).toBe(200)
    expect(listed.json().data.content).toEqual([document])
  })

  it('raises the version by one on every change of the row', async () => {
    const { provider, patientId } = await practice()
    const document = await uploaded(provider, patientId)
    await retitle(document.id, 'Renamed')
    await retitle(document.id, 'Renamed again')
    const [listed] = (await list(provider, patientId)).json().data.content
    expect(listed).toMatchObject({ id: document.id, title: 'Renamed again', version: document.version + 2 })
  })
})

describe('DELETE /api/documents/{documentId} with If-Match', () => {
  it('returns 412 RES_003 with the current version for a stale If-Match and keeps the document', async () => {
    const { provider, patientId } = await practice()
    const document = await uploaded(provider, patientId)
    await retitle(document.id, 'Changed meanwhile')
    const response = await remove(provider, document.id, { 'if-match': `W/"${document.version}"` })
    expect(response.statusCode).toBe(412)
    expect(response.json().error.code).toBe('RES_003')
    expect(response.json().error.details).toContain(`W/"${document.version + 1}"`)
    const listed = (await list(provider, patientId)).json().data.content
    expect(listed).toEqual([expect.objectContaining({ id: document.id, version: document.version + 1 })])
    const download = await app.inject({
      url: `/api/documents/${document.id}/download`,
      headers: bearer(provider.token),
    })
    expect(download.statusCode).toBe(200)
  })

  it('returns 200 with the current If-Match (strong or weak) and removes the document', async () => {
    const { provider, patientId } = await practice()
    const weak = await uploaded(provider, patientId, 'Weak')
    const strong = await uploaded(provider, patientId, 'Strong')
    const first = await remove(provider, weak.id, { 'if-match': `W/"${weak.version}"` })
    expect(first.statusCode).toBe(200)
    expect(first.json().data).toEqual({ id: weak.id })
    const second = await remove(provider, strong.id, { 'if-match': `"${strong.version}"` })
    expect(second.statusCode).toBe(200)
    expect((await list(provider, patientId)).json().data.totalElements).toBe(0)
  })

  it('returns 404 for a deleted document and 403 for another organization’s, whatever If-Match says', async () => {
    const { provider, patientId } = await practice()
    const document = await uploaded(provider, patientId)
    expect((await remove(provider, document.id)).statusCode).toBe(200)
    const again = await remove(provider, document.id, { 'if-match': `W/"${document.version}"` })
    expect(again.statusCode).toBe(404)

    const kept = await uploaded(provider, patientId)
    const stranger = await (await newOrganization(app)).user('PROVIDER')
    const foreign = await remove(stranger, kept.id, { 'if-match': 'W/"999"' })
    expect(foreign.statusCode).toBe(403)
  })

  it('returns 428 without If-Match when REQUIRE_IF_MATCH is on, and 200 with it', async () => {
    const strictDir = await mkdtemp(path.join(tmpdir(), 'ehr-document-versions-strict-'))
    const strict = await buildTestApp({ DATA_DIR: strictDir, REQUIRE_IF_MATCH: 'true' })
    try {
      const provider = await (await newOrganization(strict)).user('PROVIDER')
      const patientId = await createPatient(strict, provider)
      const created = await upload(provider, patientId, 'Strict', 'OTHER', strict)
      expect(created.statusCode).toBe(201)
      const document = created.json().data
      const refused = await remove(provider, document.id, {}, strict)
      expect(refused.statusCode).toBe(428)
      expect(refused.json().error.code).toBe('RES_003')
      const accepted = await remove(provider, document.id, { 'if-match': `W/"${document.version}"` }, strict)
      expect(accepted.statusCode).toBe(200)
    } finally {
      await strict.close()
      await rm(strictDir, { recursive: true, force: true })
    }
  })
})

describe('GET /api/patients/{patientId}/documents sync pages', () => {
  it('walks every document once in (updatedAt, id) order, then shows changes and deletions', async () => {
    const { provider, patientId } = await practice()
    const start = `updatedSince=${encodeURIComponent(new Date(Date.now() - 1000).toISOString())}`
    const documents: ListedDocument[] = []
    for (const title of ['One', 'Two', 'Three', 'Four', 'Five'])
      documents.push(await uploaded(provider, patientId, title))

    const firstPage = (await list(provider, patientId, `?${start}&size=2`)).json().data
    expect(firstPage).toMatchObject({ first: true, last: false, pageable: { pageNumber: 0, pageSize: 2 } })
    expect(firstPage.content.map((d: ListedDocument) => d.title)).toEqual(['One', 'Two'])
    // One changes and Three is deleted while the walk is under way.
    await retitle(documents[0]?.id as number, 'One, renamed')
    expect((await remove(provider, documents[2]?.id as number)).statusCode).toBe(200)

    const rest = await walk(provider, patientId, `cursor=${encodeURIComponent(firstPage.nextCursor)}`)
    expect(rest.items.map((item) => [item.id, item.deleted ?? item.title])).toEqual([
      [documents[3]?.id, 'Four'],
      [documents[4]?.id, 'Five'],
      [documents[0]?.id, 'One, renamed'],
      [documents[2]?.id, true],
    ])
    const renamed = rest.items.find((item) => item.id === documents[0]?.id)
    expect(renamed?.version).toBe((documents[0]?.version as number) + 1)
    expect(rest.items.at(-1)).toEqual({ id: documents[2]?.id, deleted: true, deletedAt: expect.any(String) })

    // Nothing more has changed: the last cursor reads an empty page, and later changes from it.
    const idle = (await list(provider, patientId, `?cursor=${encodeURIComponent(rest.cursor)}`)).json().data
    expect(idle).toMatchObject({ content: [], last: true })
    await retitle(documents[1]?.id as number, 'Two, renamed')
    const later = (await list(provider, patientId, `?cursor=${encodeURIComponent(idle.nextCursor)}`)).json()
      .data
    expect(later.content).toEqual([expect.objectContaining({ id: documents[1]?.id, title: 'Two, renamed' })])
  })

  it('reads each item once across pages of every size, with positions strictly increasing', async () => {
    const { provider, patientId } = await practice()
    const start = `updatedSince=${encodeURIComponent(new Date(Date.now() - 1000).toISOString())}`
    const ids: number[] = []
    for (const title of ['A', 'B', 'C', 'D']) ids.push((await uploaded(provider, patientId, title)).id)
    for (const size of [1, 3, 4, 10]) {
      const { items } = await walk(provider, patientId, start, size)
      expect(items.map((item) => item.id)).toEqual(ids)
      const positions = items.map((item) => `${item.updatedAt}|${String(item.id).padStart(10, '0')}`)
      expect([...positions].sort()).toEqual(positions)
    }
  })

  it('keeps to the patient and the filters: other patients’ tombstones and other categories stay out', async () => {
    const { provider, patientId } = await practice()
    const otherPatient = await createPatient(app, provider)
    const start = `updatedSince=${encodeURIComponent(new Date(Date.now() - 1000).toISOString())}`
    const consent = await uploaded(provider, patientId, 'Consent', 'CONSENT')
    await uploaded(provider, patientId, 'Imaging', 'IMAGING')
    const elsewhere = await uploaded(provider, otherPatient, 'Elsewhere', 'CONSENT')
    expect((await remove(provider, elsewhere.id)).statusCode).toBe(200)

    const { items } = await walk(provider, patientId, `${start}&category=CONSENT`)
    expect(items.map((item) => item.id)).toEqual([consent.id])
    const other = await walk(provider, otherPatient, start)
    expect(other.items).toEqual([{ id: elsewhere.id, deleted: true, deletedAt: expect.any(String) }])
  })

  it('returns 400 for a tampered cursor and for a cursor sent with other filters or another patient', async () => {
    const { provider, patientId } = await practice()
    const otherPatient = await createPatient(app, provider)
    await uploaded(provider, patientId, 'One', 'CONSENT')
    await uploaded(provider, patientId, 'Two', 'CONSENT')
    const since = encodeURIComponent(new Date(Date.now() - 60_000).toISOString())
    const page = (await list(provider, patientId, `?updatedSince=${since}&category=CONSENT&size=1`)).json()
      .data
    const cursor: string = page.nextCursor
    const [body, signature] = cursor.split('.') as [string, string]
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString('utf8')), i: 1 }),
    ).toString('base64url')

    for (const query of [
      `?cursor=${encodeURIComponent(`${forged}.${signature}`)}&category=CONSENT`,
      `?cursor=${encodeURIComponent(`${body}.${signature.slice(1)}x`)}&category=CONSENT`,
      `?cursor=${encodeURIComponent(cursor)}&category=IMAGING`,
      `?cursor=${encodeURIComponent(cursor)}`,
      `?cursor=${encodeURIComponent(cursor)}&category=CONSENT&updatedSince=${since}`,
      `?cursor=${encodeURIComponent(cursor)}&category=CONSENT&sort=title,asc`,
      `?updatedSince=${since}&page=1`,
    ]) {
      const response = await list(provider, patientId, query)
      expect(response.statusCode, query).toBe(400)
      expect(response.json().error.code).toBe('VAL_001')
    }
    const otherList = await list(
      provider,
      otherPatient,
      `?cursor=${encodeURIComponent(cursor)}&category=CONSENT`,
    )
    expect(otherList.statusCode).toBe(400)
    const same = await list(
      provider,
      patientId,
      `?cursor=${encodeURIComponent(cursor)}&category=CONSENT&size=1`,
    )
    expect(same.statusCode).toBe(200)
    expect(same.json().data.content.map((d: ListedDocument) => d.title)).toEqual(['Two'])
  })
})
