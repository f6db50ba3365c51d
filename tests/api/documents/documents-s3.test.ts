import { type AddressInfo, createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildApp } from '../../../src/app.js'
import { loadConfig } from '../../../src/config.js'
import { buildTestApp, testEnvironment } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { fileBytes, multipart } from '../../helpers/multipart.js'
import { startS3Server } from '../../helpers/servers/s3-server.js'

let s3: Awaited<ReturnType<typeof startS3Server>>
let first: App
let second: App
let user: TestUser
let patientId: number

beforeAll(async () => {
  s3 = await startS3Server('ehr-documents')
  const environment = {
    ...s3.environment,
    MAX_UPLOAD_BYTES: String(12 * 1024 * 1024),
    DOCUMENT_RETENTION_DAYS: '0',
    // An answer of 500 shows its cause (the S3 client's error) in the test output.
    LOG_LEVEL: 'error',
  }
  first = await buildTestApp(environment)
  // A second instance on the same database (the first one owns and closes it).
  second = await buildApp(loadConfig(testEnvironment(environment)), {
    database: { ...first.database, close: async () => {} },
  })
  await second.ready()
  user = await (await newOrganization(first)).user('PROVIDER')
  patientId = await createPatient(first, user)
})
afterAll(async () => {
  await second.close()
  await first.close()
  await s3.close()
})

/** A loopback port that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

function upload(app: App, content: Buffer, contentType = 'application/pdf') {
  const body = multipart([
    ['title', 'Scan'],
    ['category', 'IMAGING'],
    { fileName: 'scan.pdf', contentType, content },
  ])
  return app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/documents`,
    headers: { ...bearer(user.token), ...body.headers },
    payload: body.payload,
  })
}

describe('documents in an S3-compatible bucket (S3_BUCKET)', () => {
  it('round-trips a multi-part upload written by one instance and read by another', async () => {
    const content = fileBytes('%PDF-1.7\n', 10 * 1024 * 1024 + 3)
    const created = await upload(first, content)
    expect(created.statusCode).toBe(201)
    const { id } = created.json().data
    expect(await s3.keys()).toHaveLength(1)
    expect((await s3.keys())[0]).toMatch(/^documents\/[0-9a-f-]{36}$/)

    const whole = await second.inject({ url: `/api/documents/${id}/download`, headers: bearer(user.token) })
    expect(whole.statusCode).toBe(200)
    expect(whole.rawPayload.equals(content)).toBe(true)
    const part = await second.inject({
      url: `/api/documents/${id}/download`,
      headers: { ...bearer(user.token), range: 'bytes=1000-1999' },
    })
    expect(part.statusCode).toBe(206)
    expect(part.rawPayload.equals(content.subarray(1000, 2000))).toBe(true)
  })

  it('leaves no object behind after a refused upload, and purges at once with retention 0', async () => {
    const before = await s3.keys()
    const tooBig = await upload(first, fileBytes('%PDF-1.7\n', 13 * 1024 * 1024))
    expect(tooBig.statusCode).toBe(413)
    const spoofed = await upload(first, fileBytes('GIF89a', 4096), 'image/png')
    expect(spoofed.statusCode).toBe(415)
    expect(await s3.keys()).toEqual(before)

    const { id } = (await upload(first, fileBytes('%PDF-1.7\n', 2048))).json().data
    expect((await s3.keys()).length).toBe(before.length + 1)
    const removed = await second.inject({
      method: 'DELETE',
      url: `/api/documents/${id}`,
      headers: bearer(user.token),
    })
    expect(removed.statusCode).toBe(200)
    expect(await s3.keys()).toEqual(before)
  })

  it('answers 503 SYS_002 when the store refuses or cannot be reached, logs why, and loses no record', async () => {
    const lines: string[] = []
    const environment = { ...s3.environment, LOG_LEVEL: 'error' }
    const byBucket = { ...environment, S3_BUCKET: 'no-such-bucket' }
    const byEndpoint = { ...environment, S3_ENDPOINT: `http://127.0.0.1:${await closedPort()}` }
    for (const broken of [byBucket, byEndpoint]) {
      const app = await buildApp(loadConfig(testEnvironment(broken)), {
        database: { ...first.database, close: async () => {} },
        logStream: { write: (line) => void lines.push(line) },
      })
      await app.ready()
      try {
        const listed = async () =>
          (
            await app.inject({ url: `/api/patients/${patientId}/documents`, headers: bearer(user.token) })
          ).json().data.totalElements
        const [keys, documents] = [await s3.keys(), await listed()]
        const refused = await upload(app, fileBytes('%PDF-1.7\n', 4096))
        expect(refused.statusCode).toBe(503)
        expect(refused.json()).toMatchObject({
          success: false,
          message: 'Document storage unavailable',
          error: { code: 'SYS_002' },
        })
        expect(await s3.keys()).toEqual(keys)
        expect(await listed()).toBe(documents)

        const { id } = (await upload(first, fileBytes('%PDF-1.7\n', 2048))).json().data
        const download = await app.inject({
          url: `/api/documents/${id}/download`,
          headers: bearer(user.token),
        })
        expect(download.statusCode).toBe(503)
        expect(download.json().error.code).toBe('SYS_002')
      } finally {
        await app.close()
      }
    }
    const logged = lines
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'Document storage unavailable')
    expect(logged.length).toBeGreaterThanOrEqual(4)
    // The log names the store's own error after the service's (pino joins an error's causes).
    expect(logged.every((line) => /^Document storage unavailable: .+/.test(line.err.message))).toBe(true)
  })
})
