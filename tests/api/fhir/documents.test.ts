import { createHash, randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Binary, Bundle, DocumentReference, OperationOutcome } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { BINARY_JSON_MAX_BYTES } from '../../../src/modules/fhir/binary-routes.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  insertPendingDocument,
  newOrganization,
  type TestUser,
} from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'
import { fileBytes, multipart } from '../../helpers/multipart.js'
import { createProvider } from '../../helpers/scheduling.js'

const PUBLIC_URL = 'https://ehr.example.test'
const BASE = `${PUBLIC_URL}/fhir/R4`
const SYSTEM = 'urn:ehr-service:document-category'
const US_CORE_CATEGORY = 'http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category'
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

let app: App
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-fhir-documents-'))
  app = await buildTestApp({ DATA_DIR: dataDir, PUBLIC_URL })
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

const get = (user: TestUser | string, path: string, headers: Record<string, string> = {}) =>
  fhirGet(app, user, path, headers)

interface Upload {
  title?: string
  category?: string
  contentType?: string
  fileName?: string
  content?: Buffer
  encounterId?: number
}

/** Uploads through the REST API, as a client would; returns the REST document. */
async function upload(user: TestUser, patientId: number, file: Upload = {}) {
  const body = multipart([
    ['title', file.title ?? 'Lab report'],
    ['category', file.category ?? 'LAB_REPORT'],
    ...(file.encounterId ? [['encounterId', String(file.encounterId)] as [string, string]] : []),
    {
      fileName: file.fileName ?? 'report.pdf',
      contentType: file.contentType ?? 'application/pdf',
      content: file.content ?? fileBytes('%PDF-1.7\n', 2048),
    },
  ])
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/documents`,
    headers: { ...bearer(user.token), ...body.headers },
    payload: body.payload,
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as { id: number; sha256: string; version: number }
}

async function practice() {
  const org = await newOrganization(app)
  const nurse = await org.user('NURSE')
  const admin = await org.user('ADMIN')
  const patient = await createPatient(app, nurse)
  return { org, nurse, admin, patient }
}

const remove = (user: TestUser, id: number) =>
  app.inject({ method: 'DELETE', url: `/api/documents/${id}`, headers: bearer(user.token) })

describe('GET /fhir/R4/DocumentReference/{id}', () => {
  it('returns a valid DocumentReference with type, category, subject, custodian, date and a Binary link', async () => {
    const { org, nurse, patient } = await practice()
    const content = fileBytes('%PDF-1.7\n', 4096)
    const document = await upload(nurse, patient, {
      title: 'Blood panel',
      content,
      fileName: 'blood panel.pdf',
    })
    const response = await get(nurse, `/DocumentReference/${document.id}`)
    expect(response.statusCode).toBe(200)
    const reference = expectFhir(response) as DocumentReference
    expect(reference).toMatchObject({
      resourceType: 'DocumentReference',
      id: String(document.id),
      meta: { versionId: String(document.version) },
      status: 'current',
      docStatus: 'final',
      type: {
        coding: [
          { system: 'http://loinc.org', code: '11502-2' },
          { system: SYSTEM, code: 'LAB_REPORT' },
        ],
        text: 'Laboratory report',
      },
      category: [
        { coding: [{ system: SYSTEM, code: 'LAB_REPORT' }] },
        { coding: [{ system: US_CORE_CATEGORY, code: 'clinical-note' }] },
      ],
      subject: { reference: `Patient/${patient}` },
      custodian: { reference: `Organization/${org.id}` },
      description: 'Blood panel',
      content: [
        {
          attachment: {
            contentType: 'application/pdf',
            size: content.length,
            title: 'blood panel.pdf',
            url: `${BASE}/Binary/${document.id}`,
          },
          format: { code: 'urn:ihe:iti:xds:2017:mimeTypeSufficient' },
        },
      ],
    })
    expect(Date.parse(reference.date as string)).toBeGreaterThan(Date.now() - 60_000)
    // SHA-1 is what R4 means by hash; the SHA-256 we keep is not passed off as one.
    expect(reference.content[0]?.attachment.hash).toBeUndefined()
    // A nurse is no provider: no author, and no encounter was named.
    expect(reference.author).toBeUndefined()
    expect(reference.context).toBeUndefined()
    expect(response.headers.etag).toBe(`W/"${document.version}"`)
  })

  it('names the uploading provider as author and the encounter as context', async () => {
    const { org, admin, nurse, patient } = await practice()
    const doctor = await org.user('PROVIDER')
    const provider = await createProvider(app, admin, { userId: doctor.id })
    const encounter = await app.inject({
      method: 'POST',
      url: '/api/encounters',
      headers: bearer(doctor.token),
      payload: {
        patientId: patient,
        providerId: provider.id,
        encounterDate: new Date().toISOString().slice(0, 10),
        encounterType: 'OFFICE_VISIT',
      },
    })
    expect(encounter.statusCode, encounter.body).toBe(201)
    const encounterId = encounter.json().data.id as number
    const document = await upload(doctor, patient, { category: 'CLINICAL_NOTE', encounterId })
    const reference = expectFhir(await get(nurse, `/DocumentReference/${document.id}`)) as DocumentReference
    expect(reference.author).toEqual([{ reference: `Practitioner/${provider.id}` }])
    expect(reference.context).toEqual({ encounter: [{ reference: `Encounter/${encounterId}` }] })
    expect(reference.type?.coding?.map((coding) => coding.code)).toEqual(['34109-9', 'CLINICAL_NOTE'])
  })

  it('answers 304 for a current If-None-Match, and reads the current version by _history', async () => {
    const { nurse, patient } = await practice()
    const document = await upload(nurse, patient)
    const etag = `W/"${document.version}"`
    expect(
      (await get(nurse, `/DocumentReference/${document.id}`, { 'if-none-match': etag })).statusCode,
    ).toBe(304)
    const current = await get(nurse, `/DocumentReference/${document.id}/_history/${document.version}`)
    expect(current.statusCode).toBe(200)
    expectFhir(current)
    expect((await get(nurse, `/DocumentReference/${document.id}/_history/99`)).statusCode).toBe(404)
  })

  it('answers OperationOutcomes: 404 unknown, 410 deleted, 403 another organization', async () => {
    const { nurse, admin, patient } = await practice()
    const other = await practice()
    const deleted = await upload(nurse, patient)
    const foreign = await upload(other.nurse, other.patient)
    expect((await remove(admin, deleted.id)).statusCode).toBe(200)
    const cases: [string, number, string][] = [
      ['/DocumentReference/2000000000', 404, 'not-found'],
      [`/DocumentReference/${deleted.id}`, 410, 'deleted'],
      [`/DocumentReference/${foreign.id}`, 403, 'forbidden'],
      ['/Binary/2000000000', 404, 'not-found'],
      ['/Binary/abc', 404, 'not-found'],
      [`/Binary/${deleted.id}`, 410, 'deleted'],
      [`/Binary/${foreign.id}`, 403, 'forbidden'],
    ]
    for (const [url, status, code] of cases) {
      for (const accept of ['*/*', 'application/fhir+json']) {
        const response = await get(nurse, url, { accept })
        expect(response.statusCode, `${url} ${accept}`).toBe(status)
        expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code, url).toBe(code)
      }
    }
  })
})

describe('GET /fhir/R4/DocumentReference (search)', () => {
  async function documents() {
    const { org, nurse, admin, patient } = await practice()
    const second = await createPatient(app, nurse)
    const ids = {
      lab: (await upload(nurse, patient, { category: 'LAB_REPORT' })).id,
      scan: (await upload(nurse, patient, { category: 'IMAGING', contentType: 'image/png', content: PNG }))
        .id,
      consent: (await upload(nurse, second, { category: 'CONSENT' })).id,
      gone: (await upload(nurse, patient, { category: 'LAB_REPORT' })).id,
    }
    expect((await remove(admin, ids.gone)).statusCode).toBe(200)
    // An upload still streaming (or cut off by a crash) is no document yet.
    const pending = await insertPendingDocument(app, nurse, patient, randomUUID())
    // Stored long ago, so that date searches can tell it apart.
    await app.db
      .updateTable('documents')
      .set({ created_at: new Date('2020-05-01T10:00:00Z') })
      .where('id', '=', ids.lab)
      .execute()
    return { org, nurse, patient, second, ids, pending }
  }

  it('hides the documents of a deleted patient, as every other clinical type does', async () => {
    const { nurse, admin, patient } = await practice()
    const document = await upload(nurse, patient)
    expect((await get(nurse, `/DocumentReference/${document.id}`)).statusCode).toBe(200)
    await app.inject({ method: 'DELETE', url: `/api/patients/${patient}`, headers: bearer(admin.token) })
    expect((await get(nurse, `/DocumentReference/${document.id}`)).statusCode).toBe(404)
    expect((await get(nurse, `/Binary/${document.id}`)).statusCode).toBe(404)
    const bundle = expectFhir(await get(nurse, `/DocumentReference?patient=${patient}`)) as Bundle
    expect(bundle.entry).toBeUndefined()
  })

  it('finds by patient, category, type, date with prefixes, _lastUpdated and _id, never a deleted one', async () => {
    const { nurse, patient, second, ids, pending } = await documents()
    const cases: [string, number[]][] = [
      [`patient=${patient}`, [ids.lab, ids.scan]],
      [`patient=Patient/${second}`, [ids.consent]],
      [`patient=${BASE}/Patient/${second}`, [ids.consent]],
      ['patient=Practitioner/1', []],
      ['category=LAB_REPORT', [ids.lab]],
      [`category=${SYSTEM}|IMAGING,CONSENT`, [ids.scan, ids.consent]],
      ['category=http://loinc.org|IMAGING', []],
      [`type=${SYSTEM}|CONSENT`, [ids.consent]],
      ['date=2020-05', [ids.lab]],
      ['date=lt2021', [ids.lab]],
      ['date=ge2021-01-01', [ids.scan, ids.consent]],
      ['date=ne2020-05-01', [ids.scan, ids.consent]],
      [`date=gt2020&patient=${patient}`, [ids.scan]],
      ['_lastUpdated=ge2000-01-01&category=CONSENT', [ids.consent]],
      ['_lastUpdated=lt2000-01-01', []],
      [`_id=${ids.lab},${ids.gone},${pending}`, [ids.lab]],
      ['', [ids.lab, ids.scan, ids.consent]],
    ]
    for (const [query, expected] of cases) {
      const response = await get(nurse, `/DocumentReference?${query}`)
      expect(response.statusCode, query).toBe(200)
      const bundle = expectFhir(response) as Bundle
      expect(bundle.type).toBe('searchset')
      expect(matchIds(bundle), query).toEqual(expected)
    }
    expect((await get(nurse, '/DocumentReference?date=last-week')).statusCode).toBe(400)
    expect((await get(nurse, `/DocumentReference/${pending}`)).statusCode).toBe(404)
    expect((await get(nurse, `/Binary/${pending}`)).statusCode).toBe(404)
  })

  it('pages with next links to the end, and counts with _summary=count', async () => {
    const { nurse, ids } = await documents()
    const seen: number[] = []
    let url: string | undefined = '/fhir/R4/DocumentReference?_count=2'
    for (let page = 0; url && page < 10; page++) {
      const response = await app.inject({ url, headers: bearer(nurse.token) })
      const bundle = expectFhir(response) as Bundle
      seen.push(...matchIds(bundle))
      const next = bundle.link?.find((link) => link.relation === 'next')?.url
      if (next) expect(next.startsWith(`${BASE}/DocumentReference?`)).toBe(true)
      url = next ? next.slice(PUBLIC_URL.length) : undefined
    }
    expect(seen).toEqual([ids.lab, ids.scan, ids.consent])
    const counted = expectFhir(
      await get(nurse, '/DocumentReference?_summary=count&category=LAB_REPORT'),
    ) as Bundle
    expect(counted.total).toBe(1)
    expect(counted.entry).toBeUndefined()
  })

  it('never returns another organization’s documents', async () => {
    const mine = await documents()
    await documents()
    const bundle = expectFhir(await get(mine.nurse, '/DocumentReference?_count=100')) as Bundle
    expect(matchIds(bundle)).toEqual([mine.ids.lab, mine.ids.scan, mine.ids.consent])
  })

  it('refuses roles the REST list and download refuse (FRONT_DESK uploads but does not read)', async () => {
    const { org, ids } = await documents()
    for (const role of ['FRONT_DESK', 'BILLING'] as const) {
      const user = await org.user(role)
      for (const url of ['/DocumentReference', `/DocumentReference/${ids.lab}`, `/Binary/${ids.lab}`]) {
        const response = await get(user, url)
        expect(response.statusCode, `${role} ${url}`).toBe(403)
        expectFhir(response)
      }
    }
    const doctor = await org.user('PROVIDER')
    expect((await get(doctor, `/Binary/${ids.lab}`)).statusCode).toBe(200)
  })

  it('keeps a patient/ token to its launch patient, for references and bytes', async () => {
    const { org, nurse, patient, ids } = await documents()
    for (const scopes of [
      ['patient/DocumentReference.read'],
      ['patient/DocumentReference.rs', 'patient/Binary.r'],
    ]) {
      const token = smartToken(app, org, nurse, scopes, patient)
      const bundle = expectFhir(await get(token, '/DocumentReference')) as Bundle
      expect(matchIds(bundle), scopes.join(' ')).toEqual([ids.lab, ids.scan])
      expect((await get(token, `/DocumentReference/${ids.lab}`)).statusCode).toBe(200)
      expect((await get(token, `/DocumentReference/${ids.consent}`)).statusCode).toBe(403)
      expect((await get(token, `/Binary/${ids.lab}`)).statusCode).toBe(200)
      expect((await get(token, `/Binary/${ids.consent}`)).statusCode).toBe(403)
    }
    const patientsOnly = smartToken(app, org, nurse, ['patient/Patient.read'], patient)
    expect((await get(patientsOnly, `/Binary/${ids.lab}`)).statusCode).toBe(403)
    expect((await get(patientsOnly, '/DocumentReference')).statusCode).toBe(403)
  })
})

describe('GET /fhir/R4/Binary/{id}', () => {
  it('returns the uploaded bytes in their stored content type, with the SHA-256 ETag', async () => {
    const { nurse, patient } = await practice()
    const content = fileBytes(PNG, 300 * 1024 + 5)
    const document = await upload(nurse, patient, { category: 'IMAGING', contentType: 'image/png', content })
    const reference = expectFhir(await get(nurse, `/DocumentReference/${document.id}`)) as DocumentReference
    const link = reference.content[0]?.attachment.url as string
    const response = await app.inject({ url: link.slice(PUBLIC_URL.length), headers: bearer(nurse.token) })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toBe('image/png')
    expect(response.headers['content-length']).toBe(String(content.length))
    expect(response.headers['cache-control']).toBe('private, no-store')
    expect(response.rawPayload.equals(content)).toBe(true)
    const sha256 = createHash('sha256').update(content).digest('hex')
    expect(response.headers.etag).toBe(`"${sha256}"`)
    expect((await get(nurse, `/Binary/${document.id}`, { 'if-none-match': `"${sha256}"` })).statusCode).toBe(
      304,
    )
    const current = await get(nurse, `/Binary/${document.id}/_history/${document.version}`)
    expect(current.rawPayload.equals(content)).toBe(true)
    expect((await get(nurse, `/Binary/${document.id}/_history/99`)).statusCode).toBe(404)
  })

  it('returns a valid FHIR Binary with the bytes in base64 when asked for application/fhir+json', async () => {
    const { nurse, patient } = await practice()
    const content = Buffer.from('Patient tolerated the procedure well.\nNo complications: ✓\n', 'utf8')
    const document = await upload(nurse, patient, {
      contentType: 'text/plain',
      fileName: 'note.txt',
      content,
    })
    const response = await get(nurse, `/Binary/${document.id}`, { accept: 'application/fhir+json' })
    expect(response.statusCode).toBe(200)
    const binary = expectFhir(response) as Binary
    expect(binary).toMatchObject({
      resourceType: 'Binary',
      id: String(document.id),
      meta: { versionId: String(document.version) },
      contentType: 'text/plain',
      securityContext: { reference: `DocumentReference/${document.id}` },
    })
    expect(Buffer.from(binary.data as string, 'base64').equals(content)).toBe(true)
  })

  it(`serves a document over ${BINARY_JSON_MAX_BYTES} bytes only raw: 406 for FHIR JSON`, async () => {
    const { nurse, patient } = await practice()
    const content = fileBytes('%PDF-1.7\n', BINARY_JSON_MAX_BYTES + 1)
    const document = await upload(nurse, patient, { content })
    const refused = await get(nurse, `/Binary/${document.id}`, { accept: 'application/fhir+json' })
    expect(refused.statusCode).toBe(406)
    expect((expectFhir(refused) as OperationOutcome).issue?.[0]?.diagnostics).toContain('raw bytes')
    const raw = await get(nurse, `/Binary/${document.id}`)
    expect(raw.statusCode).toBe(200)
    expect(raw.rawPayload.equals(content)).toBe(true)
  })

  it('records the download in the audit trail like a REST download', async () => {
    const { org, nurse, patient } = await practice()
    const document = await upload(nurse, patient)
    expect((await get(nurse, `/Binary/${document.id}`)).statusCode).toBe(200)
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'outcome'])
      .where('organization_id', '=', org.id)
      .where('action', '=', 'READ')
      .execute()
    expect(rows).toContainEqual({
      action: 'READ',
      resource_type: 'document',
      resource_ids: [document.id],
      outcome: 'SUCCESS',
    })
  })

  it('has no search: GET /Binary is not a FHIR interaction here (only POST, a create, is)', async () => {
    const { nurse } = await practice()
    const response = await get(nurse, '/Binary')
    expect(response.statusCode).toBe(405)
    expect(response.headers.allow).toBe('POST')
    expectFhir(response)
  })
})
