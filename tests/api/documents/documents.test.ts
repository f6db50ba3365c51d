import { createHash } from 'node:crypto'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { sweepDocuments } from '../../../src/modules/documents/service.js'
import { localStore } from '../../../src/modules/documents/store.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  insertPendingDocument,
  newOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { fileBytes, multipart } from '../../helpers/multipart.js'

const PDF = '%PDF-1.7\n'
const MAX_UPLOAD = 4 * 1024 * 1024

let app: App
let dataDir: string
let nurse: TestUser
let patientId: number

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-documents-'))
  app = await buildTestApp({ DATA_DIR: dataDir, MAX_UPLOAD_BYTES: String(MAX_UPLOAD) })
  nurse = await (await newOrganization(app)).user('NURSE')
  patientId = await createPatient(app, nurse)
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

const storedFiles = async () => {
  const root = path.join(dataDir, 'documents')
  const shards = await readdir(root).catch(() => [] as string[])
  const files = await Promise.all(shards.map((shard) => readdir(path.join(root, shard))))
  return files.flat()
}

function upload(user: TestUser, forPatient: number, parts: Parameters<typeof multipart>[0]) {
  const body = multipart(parts)
  return app.inject({
    method: 'POST',
    url: `/api/patients/${forPatient}/documents`,
    headers: { ...bearer(user.token), ...body.headers },
    payload: body.payload,
  })
}

const pdfUpload = (content: Buffer, title = 'Lab report', fileName = 'report.pdf') =>
  upload(nurse, patientId, [
    ['title', title],
    ['category', 'LAB_REPORT'],
    { fileName, contentType: 'application/pdf', content },
  ])

describe('POST /api/patients/{patientId}/documents', () => {
  it('stores a multi-megabyte file and gives it back byte for byte', async () => {
    const content = fileBytes(PDF, 3 * 1024 * 1024 + 17)
    const created = await pdfUpload(content, 'Blood panel', '../../etc/résumé final.pdf')
    expect(created.statusCode).toBe(201)
    const document = created.json().data
    expect(document).toMatchObject({
      patientId,
      title: 'Blood panel',
      category: 'LAB_REPORT',
      contentType: 'application/pdf',
      fileName: 'résumé final.pdf',
      sizeBytes: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      uploadedBy: nurse.id,
      encounterId: null,
    })

    const download = await app.inject({
      url: `/api/documents/${document.id}/download`,
      headers: bearer(nurse.token),
    })
    expect(download.statusCode).toBe(200)
    expect(download.rawPayload.equals(content)).toBe(true)
    expect(download.headers).toMatchObject({
      'content-type': 'application/pdf',
      'content-length': String(content.length),
      etag: `"${document.sha256}"`,
      'accept-ranges': 'bytes',
      'content-disposition': `attachment; filename="r_sum_ final.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20final.pdf`,
    })
    expect(await storedFiles()).not.toContain('résumé final.pdf')
  })

  it('serves byte ranges and conditional requests', async () => {
    const content = fileBytes(PDF, 5000)
    const { id, sha256 } = (await pdfUpload(content)).json().data
    const url = `/api/documents/${id}/download`
    const first = await app.inject({ url, headers: { ...bearer(nurse.token), range: 'bytes=0-99' } })
    expect(first.statusCode).toBe(206)
    expect(first.headers['content-range']).toBe('bytes 0-99/5000')
    expect(first.rawPayload.equals(content.subarray(0, 100))).toBe(true)
    const tail = await app.inject({ url, headers: { ...bearer(nurse.token), range: 'bytes=-10' } })
    expect(tail.rawPayload.equals(content.subarray(4990))).toBe(true)
    const outside = await app.inject({ url, headers: { ...bearer(nurse.token), range: 'bytes=6000-' } })
    expect(outside.statusCode).toBe(416)
    expect(outside.headers['content-range']).toBe('bytes */5000')
    expect(outside.json().error.code).toBe('VAL_001')
    const unchanged = await app.inject({
      url,
      headers: { ...bearer(nurse.token), 'if-none-match': `"${sha256}"` },
    })
    expect(unchanged.statusCode).toBe(304)
    expect(unchanged.body).toBe('')
  })

  it('answers 413 for a file over MAX_UPLOAD_BYTES and leaves neither row nor bytes', async () => {
    const filesBefore = await storedFiles()
    const response = await upload(nurse, patientId, [
      ['title', 'Too big'],
      ['category', 'IMAGING'],
      {
        fileName: 'scan.png',
        contentType: 'image/png',
        content: fileBytes('\x89PNG\r\n\x1a\n', MAX_UPLOAD + 1024),
      },
    ])
    expect(response.statusCode).toBe(413)
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: `The file is larger than the limit of ${MAX_UPLOAD} bytes`,
    })
    const rows = await app.db.selectFrom('documents').select('id').where('title', '=', 'Too big').execute()
    expect(rows).toEqual([])
    expect(await storedFiles()).toEqual(filesBefore)
  })

  it('answers 415 when the content does not match the declared type, or the type is not accepted', async () => {
    const disguised = await upload(nurse, patientId, [
      ['title', 'Not an image'],
      ['category', 'OTHER'],
      { fileName: 'photo.png', contentType: 'image/png', content: fileBytes('MZ\x90\x00', 4096) },
    ])
    expect(disguised.statusCode).toBe(415)
    expect(disguised.json().error.details).toBe("The file's content is not image/png")
    const executable = await upload(nurse, patientId, [
      ['title', 'Program'],
      ['category', 'OTHER'],
      { fileName: 'setup.exe', contentType: 'application/x-msdownload', content: fileBytes('MZ', 100) },
    ])
    expect(executable.statusCode).toBe(415)
    const rows = await app.db
      .selectFrom('documents')
      .select('id')
      .where('title', 'in', ['Not an image', 'Program'])
      .execute()
    expect(rows).toEqual([])
  })

  it('accepts each allow-listed type by its signature', async () => {
    const samples: Array<[string, Buffer]> = [
      ['image/jpeg', fileBytes(Buffer.from([0xff, 0xd8, 0xff, 0xe0]), 300)],
      ['image/tiff', fileBytes('II*\x00', 300)],
      ['application/dicom', Buffer.concat([Buffer.alloc(128), Buffer.from('DICM'), Buffer.alloc(50)])],
      ['text/plain', Buffer.from('Patient tolerated the procedure well. Ünïcode ok.\n')],
    ]
    for (const [contentType, content] of samples) {
      const response = await upload(nurse, patientId, [
        ['title', contentType],
        ['category', 'OTHER'],
        { fileName: 'sample', contentType, content },
      ])
      expect(response.statusCode, contentType).toBe(201)
    }
  })

  it('answers 422 for missing or misplaced metadata, and for no file', async () => {
    const noTitle = await upload(nurse, patientId, [
      ['category', 'OTHER'],
      { fileName: 'a.pdf', contentType: 'application/pdf', content: fileBytes(PDF, 200) },
    ])
    expect(noTitle.statusCode).toBe(422)
    expect(noTitle.json().error).toEqual({
      code: 'VAL_002',
      details: 'title is required (send it before the file)',
      fields: [{ path: 'title', message: 'is required (send it before the file)' }],
    })
    const late = await upload(nurse, patientId, [
      ['category', 'OTHER'],
      { fileName: 'a.pdf', contentType: 'application/pdf', content: fileBytes(PDF, 200) },
      ['title', 'Late title'],
    ])
    expect(late.statusCode).toBe(422)
    expect(late.json().error.fields).toEqual([
      { path: 'title', message: 'is required (send it before the file)' },
    ])
    const noFile = await upload(nurse, patientId, [
      ['title', 'Nothing'],
      ['category', 'OTHER'],
    ])
    expect(noFile.statusCode).toBe(422)
    expect(noFile.json().error).toEqual({
      code: 'VAL_002',
      details: 'file is required',
      fields: [{ path: 'file', message: 'is required' }],
    })
    const badCategory = await upload(nurse, patientId, [
      ['title', 'X'],
      ['category', 'SELFIE'],
      { fileName: 'a.pdf', contentType: 'application/pdf', content: fileBytes(PDF, 200) },
    ])
    expect(badCategory.statusCode).toBe(422)
    expect(badCategory.json().error.details).toMatch(/^category/)
  })

  it('answers 422 naming the file part when a second file is sent, and stores neither', async () => {
    const response = await upload(nurse, patientId, [
      ['title', 'Two files'],
      ['category', 'OTHER'],
      { fileName: 'a.txt', contentType: 'text/plain', content: Buffer.from('first one') },
      { fileName: 'b.txt', contentType: 'text/plain', content: Buffer.from('other one') },
    ])
    expect(response.statusCode).toBe(422)
    expect(response.json()).toEqual({
      success: false,
      message: 'Validation failed',
      error: {
        code: 'VAL_001',
        details: 'file must be sent once: an upload holds exactly one file',
        fields: [{ path: 'file', message: 'must be sent once: an upload holds exactly one file' }],
      },
    })
    const rows = await app.db.selectFrom('documents').select('id').where('title', '=', 'Two files').execute()
    expect(rows).toEqual([])
  })

  it('answers 422 for too many fields, naming the fields an upload takes', async () => {
    const extra = Array.from({ length: 11 }, (_, index): [string, string] => [`note${index}`, 'x'])
    const response = await upload(nurse, patientId, [
      ...extra,
      { fileName: 'a.txt', contentType: 'text/plain', content: Buffer.from('text') },
    ])
    expect(response.statusCode).toBe(422)
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: 'The upload has more than 10 fields; it takes title, category and encounterId, then file',
      fields: [
        { path: '', message: 'must have at most 10 fields (title, category, encounterId), then file' },
      ],
    })
  })

  it('answers 422 listing every metadata problem in words, with error.fields', async () => {
    const response = await upload(nurse, patientId, [
      ['title', 'Scan'],
      ['category', 'SELFIE'],
      ['colour', 'blue'],
      { fileName: 'a.pdf', contentType: 'application/pdf', content: fileBytes(PDF, 200) },
    ])
    expect(response.statusCode).toBe(422)
    const categories = 'LAB_REPORT, IMAGING, CONSENT, REFERRAL, CLINICAL_NOTE, OTHER'
    expect(response.json().error).toEqual({
      code: 'VAL_001',
      details: `colour is not a known field; category must be one of ${categories}`,
      fields: [
        { path: 'colour', message: 'is not a known field' },
        { path: 'category', message: `must be one of ${categories}` },
      ],
    })
    const notANumber = await upload(nurse, patientId, [
      ['title', 'Scan'],
      ['category', 'IMAGING'],
      ['encounterId', 'abc'],
      { fileName: 'a.pdf', contentType: 'application/pdf', content: fileBytes(PDF, 200) },
    ])
    expect(notANumber.statusCode).toBe(422)
    expect(notANumber.json().error).toEqual({
      code: 'VAL_001',
      details: 'encounterId must be an integer in canonical decimal form (digits only)',
      fields: [
        { path: 'encounterId', message: 'must be an integer in canonical decimal form (digits only)' },
      ],
    })
    const encounterOf = (encounterId: string) =>
      upload(nurse, patientId, [
        ['title', 'Scan'],
        ['category', 'IMAGING'],
        ['encounterId', encounterId],
        { fileName: 'a.pdf', contentType: 'application/pdf', content: fileBytes(PDF, 200) },
      ])
    expect((await encounterOf('99999999999')).json().error.fields).toEqual([
      { path: 'encounterId', message: 'must be at most 2147483647' },
    ])
    const unknown = await encounterOf('2147483647')
    expect(unknown.statusCode).toBe(422)
    expect(unknown.json().error).toEqual({
      code: 'VAL_001',
      details: 'encounterId is not an encounter of this patient',
      fields: [{ path: 'encounterId', message: 'is not an encounter of this patient' }],
    })
  })

  it('answers 415 for a JSON body', async () => {
    const response = await app.inject({
      method: 'POST',
      url: `/api/patients/${patientId}/documents`,
      headers: bearer(nurse.token),
      payload: { title: 'x' },
    })
    expect(response.statusCode).toBe(415)
  })

  it('keeps memory flat while streaming a large upload', async () => {
    const size = 48 * 1024 * 1024
    const big = await buildTestApp({ DATA_DIR: dataDir, MAX_UPLOAD_BYTES: String(size + 1024) })
    try {
      const user = await (await newOrganization(big)).user('PROVIDER')
      const id = await createPatient(big, user)
      const chunk = fileBytes(PDF, 1024 * 1024)
      const body = multipart([
        ['title', 'Large scan'],
        ['category', 'IMAGING'],
        {
          fileName: 'large.pdf',
          contentType: 'application/pdf',
          content: async function* () {
            for (let i = 0; i < size / chunk.length; i++) yield chunk
          },
        },
      ])
      global.gc?.()
      const before = process.memoryUsage().rss
      let peak = before
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage().rss)
      }, 10)
      const response = await big.inject({
        method: 'POST',
        url: `/api/patients/${id}/documents`,
        headers: { ...bearer(user.token), ...body.headers },
        payload: body.payload,
      })
      clearInterval(sampler)
      expect(response.statusCode).toBe(201)
      expect(response.json().data.sizeBytes).toBe(size)
      expect(peak - before).toBeLessThan(size / 2)
    } finally {
      await big.close()
    }
  })
})

describe('GET /api/patients/{patientId}/documents', () => {
  it('lists metadata newest first, with paging and a category filter', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const owner = await createPatient(app, user)
    for (const [title, category] of [
      ['First', 'CONSENT'],
      ['Second', 'REFERRAL'],
      ['Third', 'CONSENT'],
    ]) {
      const response = await upload(user, owner, [
        ['title', title as string],
        ['category', category as string],
        { fileName: 'f.txt', contentType: 'text/plain', content: Buffer.from(title as string) },
      ])
      expect(response.statusCode).toBe(201)
    }
    const list = await app.inject({
      url: `/api/patients/${owner}/documents?size=2`,
      headers: bearer(user.token),
    })
    expect(list.statusCode).toBe(200)
    expect(list.json().data).toMatchObject({ totalElements: 3, totalPages: 2 })
    expect(list.json().data.content.map((d: { title: string }) => d.title)).toEqual(['Third', 'Second'])
    const consents = await app.inject({
      url: `/api/patients/${owner}/documents?category=CONSENT&sort=title,asc`,
      headers: bearer(user.token),
    })
    expect(consents.json().data.content.map((d: { title: string }) => d.title)).toEqual(['First', 'Third'])
  })
})

describe('organization scoping', () => {
  it("answers 403 for another organization's patient and document, and discloses nothing", async () => {
    const { id } = (await pdfUpload(fileBytes(PDF, 1000), 'Private')).json().data
    const outsider = await (await newOrganization(app)).user('PROVIDER', 'NURSE', 'ADMIN')
    const listing = await app.inject({
      url: `/api/patients/${patientId}/documents`,
      headers: bearer(outsider.token),
    })
    expect(listing.statusCode).toBe(403)
    const download = await app.inject({
      url: `/api/documents/${id}/download`,
      headers: bearer(outsider.token),
    })
    expect(download.statusCode).toBe(403)
    expect(download.body).not.toContain('%PDF')
    const removal = await app.inject({
      method: 'DELETE',
      url: `/api/documents/${id}`,
      headers: bearer(outsider.token),
    })
    expect(removal.statusCode).toBe(403)
    const uploadElsewhere = await upload(outsider, patientId, [
      ['title', 'Intrusion'],
      ['category', 'OTHER'],
      { fileName: 'a.txt', contentType: 'text/plain', content: Buffer.from('x') },
    ])
    expect(uploadElsewhere.statusCode).toBe(403)
  })

  it('answers 404 for a document that does not exist', async () => {
    const response = await app.inject({
      url: '/api/documents/2000000000/download',
      headers: bearer(nurse.token),
    })
    expect(response.statusCode).toBe(404)
  })
})

describe('DELETE /api/documents/{documentId} and housekeeping', () => {
  it('hides the document at once, keeps the bytes for the retention period, then purges them', async () => {
    const provider = await (await newOrganization(app)).user('PROVIDER')
    const owner = await createPatient(app, provider)
    const created = await upload(provider, owner, [
      ['title', 'To delete'],
      ['category', 'OTHER'],
      { fileName: 'a.txt', contentType: 'text/plain', content: Buffer.from('delete me') },
    ])
    const { id } = created.json().data
    const row = await app.db
      .selectFrom('documents')
      .select('storage_key')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    const file = path.join(dataDir, 'documents', row.storage_key.slice(0, 2), row.storage_key)

    const removed = await app.inject({
      method: 'DELETE',
      url: `/api/documents/${id}`,
      headers: bearer(provider.token),
    })
    expect(removed.statusCode).toBe(200)
    expect(removed.json().data).toEqual({ id })
    expect(
      (await app.inject({ url: `/api/documents/${id}/download`, headers: bearer(provider.token) }))
        .statusCode,
    ).toBe(404)
    const list = await app.inject({
      url: `/api/patients/${owner}/documents`,
      headers: bearer(provider.token),
    })
    expect(list.json().data.totalElements).toBe(0)
    expect((await stat(file)).size).toBe(9)

    const store = localStore(path.join(dataDir, 'documents'))
    await sweepDocuments(app.db, store, 30, Date.now() + 29 * 86_400_000)
    expect((await stat(file)).size).toBe(9)
    await sweepDocuments(app.db, store, 30, Date.now() + 31 * 86_400_000)
    await expect(stat(file)).rejects.toThrow()
    const purged = await app.db
      .selectFrom('documents')
      .select('purged_at')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    expect(purged.purged_at).toBeInstanceOf(Date)
  })

  it('clears an upload that a crash left PENDING: the row and any bytes', async () => {
    const store = localStore(path.join(dataDir, 'documents'))
    const id = await insertPendingDocument(app, nurse, patientId, 'crashed-upload-key')
    await store.write(
      'crashed-upload-key',
      (async function* () {
        yield Buffer.from('half')
      })(),
    )
    await sweepDocuments(app.db, store, 30, Date.now() + 2 * 3600_000)
    expect(
      await app.db.selectFrom('documents').select('id').where('id', '=', id).executeTakeFirst(),
    ).toBeUndefined()
    expect(await storedFiles()).not.toContain('crashed-upload-key')
  })
})
