import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../helpers/factories.js'
import { multipart } from '../helpers/multipart.js'

let app: App
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-document-race-'))
  app = await buildTestApp({ DATA_DIR: dataDir })
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

async function storedDocument(user: TestUser) {
  const patientId = await createPatient(app, user)
  const body = multipart([
    ['title', 'Raced'],
    ['category', 'OTHER'],
    { fileName: 'raced.txt', contentType: 'text/plain', content: Buffer.from('raced\n') },
  ])
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/documents`,
    headers: { ...bearer(user.token), ...body.headers },
    payload: body.payload,
  })
  expect(response.statusCode).toBe(201)
  return response.json().data as { id: number; version: number }
}

const deleteWith = (user: TestUser, id: number, ifMatch: string) =>
  app.inject({
    method: 'DELETE',
    url: `/api/documents/${id}`,
    headers: { ...bearer(user.token), 'if-match': ifMatch },
  })

describe('conditional document deletion on PostgreSQL', () => {
  it('lets exactly one of 20 simultaneous deletions with the same If-Match succeed, leaving one tombstone', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const document = await storedDocument(provider)
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => deleteWith(provider, document.id, `W/"${document.version}"`)),
    )
    const statuses = answers.map((response) => response.statusCode)
    expect(statuses.filter((status) => status === 200)).toHaveLength(1)
    // The others find the document gone, as any deletion of a deleted document does.
    expect(statuses.filter((status) => status === 404)).toHaveLength(19)
    const row = await app.db
      .selectFrom('documents')
      .select(['status', 'version'])
      .where('id', '=', document.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ status: 'DELETED', version: document.version + 1 })
    const tombstones = await app.db
      .selectFrom('deleted_records')
      .select('record_id')
      .where('resource_type', '=', 'document')
      .where('record_id', '=', document.id)
      .execute()
    expect(tombstones).toHaveLength(1)
  })

  it('refuses all of 20 simultaneous deletions with a stale If-Match (412) and keeps the document', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const document = await storedDocument(provider)
    await app.db.updateTable('documents').set({ title: 'Changed' }).where('id', '=', document.id).execute()
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => deleteWith(provider, document.id, `W/"${document.version}"`)),
    )
    expect(answers.map((response) => response.statusCode)).toEqual(Array(20).fill(412))
    expect(answers[0]?.json().error.code).toBe('RES_003')
    const row = await app.db
      .selectFrom('documents')
      .select(['status', 'version'])
      .where('id', '=', document.id)
      .executeTakeFirstOrThrow()
    expect(row).toEqual({ status: 'AVAILABLE', version: document.version + 1 })
  })
})
