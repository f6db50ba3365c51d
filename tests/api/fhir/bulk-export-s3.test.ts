import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { exported, exportedResources, idsOf, local } from '../../helpers/bulk-export.js'
import { bearer, createPatient, newOrganization } from '../../helpers/factories.js'
import { startS3Server } from '../../helpers/servers/s3-server.js'

let s3: Awaited<ReturnType<typeof startS3Server>>
let app: App

beforeAll(async () => {
  s3 = await startS3Server('ehr-exports')
  app = await buildTestApp({ ...s3.environment, BULK_EXPORT_FILE_MAX_BYTES: '2048' })
})
afterAll(async () => {
  await app.close()
  await s3.close()
})

describe('FHIR bulk export with documents in S3', () => {
  it('writes its files to the bucket, serves them whole and by range, and removes them on cancel', async () => {
    const org = await newOrganization(app)
    const doctor = await org.user('PROVIDER')
    const nurse = await org.user('NURSE')
    const patients: number[] = []
    for (let i = 0; i < 6; i++) patients.push(await createPatient(app, nurse))
    const { status, manifest } = await exported(app, doctor, '/$export?_type=Patient')
    expect(manifest.output.length).toBeGreaterThan(1)
    expect(idsOf(await exportedResources(app, doctor, manifest), 'Patient')).toEqual(patients)

    const url = local(manifest.output[0]?.url ?? '')
    const whole = await app.inject({ url, headers: bearer(doctor.token) })
    const part = await app.inject({ url, headers: { ...bearer(doctor.token), range: 'bytes=5-14' } })
    expect(part.statusCode).toBe(206)
    expect(part.body).toBe(whole.body.slice(5, 15))
    expect(await s3.keys()).toHaveLength(manifest.output.length)

    expect(
      (await app.inject({ method: 'DELETE', url: status, headers: bearer(doctor.token) })).statusCode,
    ).toBe(202)
    expect(await s3.keys()).toEqual([])
  })
})
