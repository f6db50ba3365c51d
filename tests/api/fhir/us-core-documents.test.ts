import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Bundle, DocumentReference, Resource } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds } from '../../helpers/fhir.js'
import { fileBytes, multipart } from '../../helpers/multipart.js'
import { createProvider } from '../../helpers/scheduling.js'
import { usCoreErrors } from '../../helpers/us-core.js'

// DocumentReference as US Core 6.1.0: it claims us-core-documentreference and meets it with 0
// errors, with full and with minimal data, and a document read and written back stays a no-op.

const PROFILE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-documentreference|6.1.0'
const CLINICAL_NOTE = {
  coding: [
    {
      system: 'http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category',
      code: 'clinical-note',
      display: 'Clinical Note',
    },
  ],
}

let app: App
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-us-core-documents-'))
  app = await buildTestApp({ DATA_DIR: dataDir })
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

async function upload(user: TestUser, patientId: number, fields: [string, string][]): Promise<number> {
  const body = multipart([
    ...fields,
    { fileName: 'note.pdf', contentType: 'application/pdf', content: fileBytes('%PDF-1.7\n', 1024) },
  ])
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/documents`,
    headers: { ...bearer(user.token), ...body.headers },
    payload: body.payload,
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data.id
}

async function read(user: TestUser, id: number): Promise<DocumentReference> {
  const response = await fhirGet(app, user, `/DocumentReference/${id}`)
  expect(response.statusCode, response.body).toBe(200)
  return expectFhir(response) as DocumentReference
}

async function expectNoOpWrite(user: TestUser, resource: Resource) {
  const response = await app.inject({
    method: 'PUT',
    url: `/fhir/R4/${resource.resourceType}/${resource.id}`,
    headers: { ...bearer(user.token), 'content-type': 'application/fhir+json' },
    payload: resource,
  })
  expect(response.statusCode, response.body).toBe(200)
  expect((response.json() as Resource).meta?.versionId).toBe(resource.meta?.versionId)
}

describe('DocumentReference (us-core-documentreference)', () => {
  it('claims the profile and meets it with full and minimal data; writes back as a no-op', async () => {
    const org = await newOrganization(app)
    const admin = await org.user('ADMIN')
    const doctor = await org.user('PROVIDER')
    const nurse = await org.user('NURSE')
    const { id: practitioner } = await createProvider(app, admin, { userId: doctor.id })
    const patient = await createPatient(app, nurse)
    const encounter = await app.inject({
      method: 'POST',
      url: '/api/encounters',
      headers: bearer(doctor.token),
      payload: {
        patientId: patient,
        providerId: practitioner,
        encounterDate: '2024-03-15',
        encounterType: 'OFFICE_VISIT',
      },
    })
    expect(encounter.statusCode, encounter.body).toBe(201)
    const full = await upload(doctor, patient, [
      ['title', 'Progress note'],
      ['category', 'CLINICAL_NOTE'],
      ['encounterId', String(encounter.json().data.id)],
    ])
    // A nurse is no provider (no author); OTHER has no LOINC document type.
    const minimal = await upload(nurse, patient, [
      ['title', 'Scanned form'],
      ['category', 'OTHER'],
    ])
    for (const id of [full, minimal]) {
      const document = await read(doctor, id)
      expect(document.meta?.profile).toEqual([PROFILE])
      expect(document.custodian).toEqual({ reference: `Organization/${org.id}` })
      expect(usCoreErrors(document, PROFILE), String(id)).toEqual([])
      await expectNoOpWrite(doctor, document)
    }
    const fullRead = await read(doctor, full)
    expect(fullRead.type?.coding?.[0]).toEqual({
      system: 'http://loinc.org',
      code: '34109-9',
      display: 'Note',
    })
    expect(fullRead.category).toContainEqual(CLINICAL_NOTE)
    expect(fullRead.author).toEqual([{ reference: `Practitioner/${practitioner}` }])
    expect(fullRead.context?.encounter).toEqual([{ reference: `Encounter/${encounter.json().data.id}` }])
    const minimalRead = await read(doctor, minimal)
    expect(minimalRead.type?.coding?.[0]?.code).toBe('unknown')
    expect(minimalRead.type?.text).toBe('Other')
    expect(minimalRead.category).not.toContainEqual(CLINICAL_NOTE)
    expect(minimalRead.author).toBeUndefined()
    expect(minimalRead.context).toBeUndefined()
  })

  it('maps each category to a LOINC document type, clinical-note for the notes and reports', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const patient = await createPatient(app, nurse)
    const expected: [string, string, boolean][] = [
      ['LAB_REPORT', '11502-2', true],
      ['IMAGING', '18748-4', true],
      ['REFERRAL', '57133-1', true],
      ['CLINICAL_NOTE', '34109-9', true],
      ['CONSENT', '59284-0', false],
    ]
    for (const [category, loinc, note] of expected) {
      const id = await upload(nurse, patient, [
        ['title', category],
        ['category', category],
      ])
      const document = await read(nurse, id)
      expect(document.type?.coding?.[0], category).toMatchObject({ system: 'http://loinc.org', code: loinc })
      expect(document.category?.some((concept) => concept.coding?.[0]?.code === 'clinical-note')).toBe(note)
      expect(usCoreErrors(document, PROFILE), category).toEqual([])
    }
  })

  it('searches category and type by the codes a read carries: ours, clinical-note, LOINC, unknown', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const patient = await createPatient(app, nurse)
    const ids: Record<string, number> = {}
    for (const category of ['LAB_REPORT', 'IMAGING', 'CONSENT', 'OTHER']) {
      ids[category] = await upload(nurse, patient, [
        ['title', category],
        ['category', category],
      ])
    }
    const search = async (query: string) => {
      const response = await fhirGet(app, nurse, `/DocumentReference?patient=${patient}&${query}`)
      expect(response.statusCode, response.body).toBe(200)
      return matchIds(expectFhir(response) as Bundle).sort((a, b) => a - b)
    }
    const uri = encodeURIComponent
    expect(await search(`category=${uri(`${CLINICAL_NOTE.coding[0]?.system}|clinical-note`)}`)).toEqual([
      ids.LAB_REPORT,
      ids.IMAGING,
    ])
    expect(await search('category=clinical-note,CONSENT')).toEqual([ids.LAB_REPORT, ids.IMAGING, ids.CONSENT])
    expect(await search(`type=${uri('http://loinc.org|18748-4')}`)).toEqual([ids.IMAGING])
    expect(await search('type=11502-2')).toEqual([ids.LAB_REPORT])
    expect(await search('type=unknown')).toEqual([ids.OTHER])
    expect(await search('type=CONSENT')).toEqual([ids.CONSENT])
    // A code in another system, or US Core's category given as a type, names nothing.
    expect(await search(`type=${uri('http://loinc.org|CONSENT')}`)).toEqual([])
    expect(await search('type=clinical-note')).toEqual([])
  })
})
