import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Observation, OperationOutcome, Resource } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { localStore } from '../../../src/modules/documents/store.js'
import { ExportWorker, type ExportWorkerOptions } from '../../../src/modules/fhir/export/worker.js'
import { resourceTypes } from '../../../src/modules/fhir/resource-types.js'
import { buildTestApp, openTestDatabase } from '../../helpers/app.js'
import {
  ASYNC,
  danglingReferences,
  exported as exportedAs,
  exportedResources,
  fileLines,
  idsOf,
  kickOff as kickOffAs,
  local,
  type Manifest,
  referencesOf,
} from '../../helpers/bulk-export.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { smartToken } from '../../helpers/fhir.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import { newRecords, RECORDS_ENVIRONMENT, type Records, recordsResolver } from '../../helpers/records.js'
import { booked, newPractice } from '../../helpers/scheduling.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp(RECORDS_ENVIRONMENT, undefined, { resolveHost: recordsResolver })
})
afterAll(async () => {
  await app.close()
})

const kickOff = (user: TestUser | string, path: string, headers?: Record<string, string>) =>
  kickOffAs(app, user, path, headers)
const exported = (user: TestUser | string, path: string) => exportedAs(app, user, path)
const lines = (user: TestUser | string, url: string) => fileLines(app, user, url)
const resourcesOf = (user: TestUser | string, manifest: Manifest) => exportedResources(app, user, manifest)

/** The ids of the measurements a vital signs panel of the export references (its hasMember). */
const measurementsOf = (byType: Map<string, Resource[]>, panelId: number) =>
  (
    (byType.get('Observation') ?? []).find((resource) => resource.id === String(panelId)) as
      | Observation
      | undefined
  )?.hasMember?.map((member) => Number(member.reference?.split('/')[1])) ?? []

describe('FHIR bulk export ($export)', () => {
  let records: Records

  beforeAll(async () => {
    records = await newRecords(app)
  })

  it('exports the whole organization: valid NDJSON of every type, references resolving within it', async () => {
    const doctor = records.makers.doctor
    const started = await kickOff(doctor, '/$export')
    expect(started.statusCode).toBe(202)
    const status = local(String(started.headers['content-location']))
    const waiting = await app.inject({ url: status, headers: bearer(doctor.token) })
    expect(waiting.statusCode).toBe(202)
    expect(waiting.headers['x-progress']).toBeTruthy()
    expect(waiting.headers['retry-after']).toBe('2')

    await app.bulkExports.drainOnce()
    const done = await app.inject({ url: status, headers: bearer(doctor.token) })
    expect(done.statusCode).toBe(200)
    const manifest = done.json() as Manifest
    expect(manifest.requiresAccessToken).toBe(true)
    expect(manifest.request).toMatch(/\/fhir\/R4\/\$export$/)
    expect(Date.parse(manifest.transactionTime)).toBeLessThanOrEqual(Date.now())
    expect(manifest.error).toEqual([])

    const byType = await resourcesOf(doctor, manifest)
    expect([...byType.keys()].sort()).toEqual(
      [
        'AllergyIntolerance',
        'Appointment',
        'Condition',
        'DiagnosticReport',
        'DocumentReference',
        'Encounter',
        'Location',
        'MedicationRequest',
        'MedicationStatement',
        'Observation',
        'Organization',
        'Patient',
        'Practitioner',
        'PractitionerRole',
      ].sort(),
    )
    expect(idsOf(byType, 'Patient')).toEqual([records.ids.patient])
    expect(idsOf(byType, 'Observation')).toEqual(
      [records.ids.vitals, ...measurementsOf(byType, records.ids.vitals), records.ids['lab-results']].sort(
        (a, b) => a - b,
      ),
    )
    // The medication list twice: as MedicationStatement and as US Core MedicationRequest.
    expect(idsOf(byType, 'MedicationRequest')).toEqual([records.ids.medications])
    expect(idsOf(byType, 'MedicationStatement')).toEqual([records.ids.medications])
    expect(idsOf(byType, 'DiagnosticReport')).toEqual([records.ids['lab-results']])
    const references = [...byType.values()].flat().flatMap(referencesOf)
    expect(references).toContain(`Patient/${records.ids.patient}`)
    expect(references).toContain(`Practitioner/${records.ids.provider}`)
    expect(danglingReferences(byType)).toEqual([])
  })

  it('keeps jobs and files to their requester: another user or organization gets 404', async () => {
    const { status, manifest } = await exported(records.makers.doctor, '/Patient/$export?_type=Patient')
    const colleague = await records.org.user('PROVIDER')
    const stranger = await (await newOrganization(app)).user('PROVIDER')
    for (const user of [colleague, stranger]) {
      expect((await app.inject({ url: status, headers: bearer(user.token) })).statusCode).toBe(404)
      const file = await app.inject({
        url: local(manifest.output[0]?.url ?? ''),
        headers: bearer(user.token),
      })
      expect(file.statusCode).toBe(404)
      expect((file.json() as OperationOutcome).resourceType).toBe('OperationOutcome')
    }
    expect((await app.inject({ url: status })).statusCode).toBe(401)
  })

  it('exports only the types asked for, filtered by _typeFilter', async () => {
    const { manifest } = await exported(
      records.makers.doctor,
      `/$export?_type=Patient,Observation&_typeFilter=${encodeURIComponent('Observation?category=laboratory')}`,
    )
    const byType = await resourcesOf(records.makers.doctor, manifest)
    expect([...byType.keys()].sort()).toEqual(['Observation', 'Patient'])
    expect(idsOf(byType, 'Observation')).toEqual([records.ids['lab-results']])
  })

  it('serves a file by byte range', async () => {
    const { manifest } = await exported(records.makers.doctor, '/$export?_type=Patient')
    const url = local(manifest.output[0]?.url ?? '')
    const whole = await app.inject({ url, headers: bearer(records.makers.doctor.token) })
    const part = await app.inject({
      url,
      headers: { ...bearer(records.makers.doctor.token), range: 'bytes=0-9' },
    })
    expect(part.statusCode).toBe(206)
    expect(part.body).toBe(whole.body.slice(0, 10))
    expect(part.headers['content-range']).toBe(`bytes 0-9/${Buffer.byteLength(whole.body)}`)
  })

  it('serves a file to the NDJSON media types clients ask for, answered as the type asked for', async () => {
    const { manifest } = await exported(records.makers.doctor, '/$export?_type=Patient')
    const url = local(manifest.output[0]?.url ?? '')
    const whole = await app.inject({ url, headers: bearer(records.makers.doctor.token) })
    for (const [accept, type] of [
      ['application/fhir+ndjson', 'application/fhir+ndjson'],
      ['application/ndjson', 'application/ndjson'],
      ['application/x-ndjson', 'application/x-ndjson'],
      ['application/fhir+ndjson, application/ndjson;q=0.5', 'application/fhir+ndjson'],
      ['*/*', 'application/fhir+ndjson'],
    ]) {
      const response = await app.inject({ url, headers: { ...bearer(records.makers.doctor.token), accept } })
      expect(response.statusCode, accept).toBe(200)
      expect(response.headers['content-type'], accept).toBe(type)
      expect(response.body, accept).toBe(whole.body)
    }
    const xml = await app.inject({
      url,
      headers: { ...bearer(records.makers.doctor.token), accept: 'application/fhir+xml' },
    })
    expect(xml.statusCode).toBe(406)
    expect(xml.json().resourceType).toBe('OperationOutcome')
  })

  it('cancels with DELETE: the status and files are gone', async () => {
    const { status, manifest } = await exported(records.makers.doctor, '/$export?_type=Practitioner')
    const token = bearer(records.makers.doctor.token)
    expect((await app.inject({ method: 'DELETE', url: status, headers: token })).statusCode).toBe(202)
    expect((await app.inject({ url: status, headers: token })).statusCode).toBe(404)
    expect((await app.inject({ url: local(manifest.output[0]?.url ?? ''), headers: token })).statusCode).toBe(
      404,
    )
  })

  it('forgets an export once it expires, files included', async () => {
    const { status, manifest } = await exported(records.makers.doctor, '/$export?_type=Practitioner')
    const id = status.split('/').at(-1) as string
    await app.db
      .updateTable('bulk_exports')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', id)
      .execute()
    await app.bulkExports.drainOnce()
    const token = bearer(records.makers.doctor.token)
    expect((await app.inject({ url: status, headers: token })).statusCode).toBe(404)
    expect((await app.inject({ url: local(manifest.output[0]?.url ?? ''), headers: token })).statusCode).toBe(
      404,
    )
    const left = await app.db.selectFrom('bulk_exports').select('id').where('id', '=', id).execute()
    expect(left).toEqual([])
  })

  it('leaves out the types a role may not read and says so in the error file; refuses them when asked', async () => {
    const biller = records.makers.biller
    const { manifest } = await exported(biller, '/$export')
    expect(manifest.output.map((file) => file.type)).not.toContain('Observation')
    expect(manifest.error).toHaveLength(1)
    const issues = (await lines(biller, manifest.error[0]?.url ?? '')) as OperationOutcome[]
    expect(issues.map((outcome) => outcome.issue?.[0]?.diagnostics).join('\n')).toContain(
      'Observation was not exported',
    )
    const refused = await kickOff(biller, '/$export?_type=Observation')
    expect(refused.statusCode).toBe(403)
    expect((refused.json() as OperationOutcome).resourceType).toBe('OperationOutcome')
  })

  it('refuses a patient/ token, which is kept to one patient', async () => {
    const token = smartToken(app, records.org, records.makers.doctor, ['patient/*.read'], records.ids.patient)
    expect((await kickOff(token, '/Patient/$export')).statusCode).toBe(403)
  })

  it('exports only the categories a granular scope grants, with or without a _typeFilter', async () => {
    const { org, ids } = records
    const token = smartToken(app, org, records.makers.doctor, [
      'system/Observation.rs?category=laboratory',
      'system/Patient.rs',
    ])
    for (const query of [
      '_type=Observation',
      `_typeFilter=${encodeURIComponent('Observation?status=final')}`,
    ]) {
      const { manifest } = await exported(token, `/$export?${query}`)
      const observations = (await resourcesOf(token, manifest)).get('Observation') ?? []
      expect(
        observations.map((observation) => Number(observation.id)),
        query,
      ).toEqual([ids['lab-results']])
    }
    const vitalSigns = smartToken(app, org, records.makers.doctor, [
      'user/Observation.rs?category=vital-signs',
    ])
    const { manifest } = await exported(vitalSigns, '/$export?_type=Observation')
    const observations = (await resourcesOf(vitalSigns, manifest)).get('Observation') ?? []
    expect(observations.map((observation) => Number(observation.id))).toEqual([
      ids.vitals,
      ...measurementsOf(new Map([['Observation', observations]]), ids.vitals),
    ])
  })

  it('answers 400 with an OperationOutcome for what it does not offer', async () => {
    const doctor = records.makers.doctor
    expect((await kickOff(doctor, '/$export', { accept: 'application/fhir+json' })).statusCode).toBe(400)
    for (const query of [
      '_outputFormat=application/fhir%2Bxml',
      '_type=Claim',
      '_since=yesterday',
      'includeAssociatedData=LatestProvenanceResources',
      `_typeFilter=${encodeURIComponent('Observation?foo=bar')}`,
      'unknown=1',
    ]) {
      const response = await kickOff(doctor, `/$export?${query}`)
      expect(response.statusCode, query).toBe(400)
      expect((response.json() as OperationOutcome).issue?.[0]?.diagnostics, query).toBeTruthy()
    }
  })

  it('takes a POST kick-off with a Parameters body', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/fhir/R4/$export',
      headers: { ...bearer(records.makers.doctor.token), ...ASYNC, 'content-type': 'application/fhir+json' },
      payload: {
        resourceType: 'Parameters',
        parameter: [
          { name: '_type', valueString: 'Patient' },
          { name: '_outputFormat', valueString: 'application/fhir+ndjson' },
        ],
      },
    })
    expect(response.statusCode, response.body).toBe(202)
    await app.bulkExports.drainOnce()
    const done = await app.inject({
      url: local(String(response.headers['content-location'])),
      headers: bearer(records.makers.doctor.token),
    })
    expect((done.json() as Manifest).output.map((file) => file.type)).toEqual(['Patient'])
  })
})

describe('GET /fhir/R4/metadata (bulk data)', () => {
  it('declares the export operations and the Group resource, and stays a valid CapabilityStatement', async () => {
    const response = await app.inject({ url: '/fhir/R4/metadata' })
    const statement = response.json()
    expect(fhirErrors(statement)).toEqual([])
    const rest = statement.rest[0]
    expect(rest.operation).toEqual([
      { name: 'export', definition: 'http://hl7.org/fhir/uv/bulkdata/OperationDefinition/export' },
    ])
    const byType = new Map(rest.resource.map((resource: { type: string }) => [resource.type, resource]))
    expect(byType.get('Group')).toMatchObject({ operation: [{ name: 'export' }] })
    expect(byType.get('Patient')).toMatchObject({ operation: [{ name: 'export' }] })
  })
})

describe('FHIR bulk export: Groups', () => {
  it('lists the organization’s Groups and exports a provider’s patients only', async () => {
    const practice = await newPractice(app)
    const doctor = await practice.org.user('PROVIDER')
    const other = await createPatient(app, practice.nurse)
    await booked(app, practice, new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10), '10:00:00')

    const list = await app.inject({ url: '/fhir/R4/Group', headers: bearer(doctor.token) })
    expect(list.statusCode).toBe(200)
    const ids = (list.json().entry as { resource: { id: string } }[]).map((entry) => entry.resource.id)
    expect(ids).toEqual(['all-patients', `provider-${practice.provider.id}`])
    expect(fhirErrors(list.json())).toEqual([])

    const { manifest } = await exported(doctor, `/Group/provider-${practice.provider.id}/$export`)
    const byType = await resourcesOf(doctor, manifest)
    expect(idsOf(byType, 'Patient')).toEqual([practice.patient.id])
    const everyone = await resourcesOf(
      doctor,
      (await exported(doctor, '/Group/all-patients/$export')).manifest,
    )
    expect(idsOf(everyone, 'Patient')).toEqual([practice.patient.id, other].sort((a, b) => a - b))

    const unknown = await kickOff(doctor, '/Group/provider-999999/$export')
    expect(unknown.statusCode).toBe(404)
  })
})

describe('FHIR bulk export: consecutive exports', () => {
  it('with _since the previous transactionTime, miss nothing and repeat nothing', async () => {
    const org = await newOrganization(app)
    const doctor = await org.user('PROVIDER')
    const nurse = await org.user('NURSE')
    const first = await createPatient(app, nurse)
    const second = await createPatient(app, nurse)
    const one = await exported(doctor, '/$export?_type=Patient')
    const exportedOnce = idsOf(await resourcesOf(doctor, one.manifest), 'Patient')
    expect(exportedOnce).toEqual([first, second])

    const third = await createPatient(app, nurse)
    const changed = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${first}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: { contact: { phoneNumber: '+1 555 010 1234' } },
    })
    expect(changed.statusCode).toBe(200)
    const two = await exported(doctor, `/$export?_type=Patient&_since=${one.manifest.transactionTime}`)
    expect(idsOf(await resourcesOf(doctor, two.manifest), 'Patient')).toEqual([first, third])
    const three = await exported(doctor, `/$export?_type=Patient&_since=${two.manifest.transactionTime}`)
    expect(three.manifest.output).toEqual([])
  })

  it('splits a type into files no larger than the configured size', async () => {
    const small = await buildTestApp({ BULK_EXPORT_FILE_MAX_BYTES: '2048' })
    try {
      const org = await newOrganization(small)
      const doctor = await org.user('PROVIDER')
      const nurse = await org.user('NURSE')
      const patients = []
      for (let i = 0; i < 8; i++) patients.push(await createPatient(small, nurse))
      const started = await small.inject({
        url: '/fhir/R4/$export?_type=Patient',
        headers: { ...bearer(doctor.token), ...ASYNC },
      })
      await small.bulkExports.drainOnce()
      const manifest = (
        await small.inject({
          url: local(String(started.headers['content-location'])),
          headers: bearer(doctor.token),
        })
      ).json() as Manifest
      expect(manifest.output.length).toBeGreaterThan(1)
      const seen: number[] = []
      for (const file of manifest.output) {
        const body = (await small.inject({ url: local(file.url), headers: bearer(doctor.token) })).body
        expect(Buffer.byteLength(body)).toBeLessThanOrEqual(2048)
        seen.push(
          ...body
            .split('\n')
            .filter(Boolean)
            .map((line) => Number(JSON.parse(line).id)),
        )
      }
      expect(seen).toEqual(patients)
    } finally {
      await small.close()
    }
  })
})

describe('FHIR bulk export worker at shutdown', () => {
  it('waits for a look for work under way, so nothing queries the database once it has stopped', async () => {
    const database = await openTestDatabase()
    const finished: number[] = []
    database.observe({ query: () => void finished.push(performance.now()), connectionError() {} })
    const errors: unknown[] = []
    const worker = new ExportWorker({
      db: database.db,
      store: { remove: async () => {} } as unknown as ExportWorkerOptions['store'],
      types: [],
      log: { error: (entry: unknown) => void errors.push(entry) } as unknown as ExportWorkerOptions['log'],
      leaseOwner: 'shutdown-test',
      fileMaxBytes: 1_000_000,
      retentionHours: 1,
      leaseSeconds: 30,
      perOrganization: 1,
      concurrency: 1,
      pollIntervalMs: 60_000,
      snapshotWaitMs: 1000,
      releaseLeasesAtStart: false,
      busy: () => false,
    })
    try {
      await worker.start()
      // Its first look for work starts on the next timer turn and is then waiting on the database.
      await new Promise((resolve) => setTimeout(resolve, 0))
      await worker.stop()
      const stoppedAt = performance.now()
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(finished.length).toBeGreaterThan(0)
      expect(finished.filter((at) => at > stoppedAt)).toEqual([])
      expect(errors).toEqual([])
    } finally {
      await database.close()
    }
  })
})

describe('FHIR bulk export worker with a lease shorter than a file takes', () => {
  it('renews the lease with every file and never runs one export twice at once: every resource exactly once', async () => {
    const small = await buildTestApp({})
    const files = await mkdtemp(path.join(tmpdir(), 'ehr-export-lease-'))
    const errors: unknown[] = []
    let writes = 0
    const local = localStore(files)
    const store: ExportWorkerOptions['store'] = {
      ...local,
      // The second file takes longer than the lease: the lease lapses while this instance writes it.
      async write(key, source) {
        writes += 1
        await new Promise((resolve) => setTimeout(resolve, writes === 2 ? 1500 : 100))
        return local.write(key, source)
      },
    }
    const worker = new ExportWorker({
      db: small.db,
      store,
      types: resourceTypes({
        mrnSystem: 'urn:oid:2.999',
        base: 'http://127.0.0.1/fhir/R4',
        documents: { store: local, maxBytes: 1024, retentionDays: 0 },
      }),
      log: { error: (entry: unknown) => void errors.push(entry) } as unknown as ExportWorkerOptions['log'],
      leaseOwner: 'lease-test',
      // One resource per file.
      fileMaxBytes: 1,
      retentionHours: 1,
      leaseSeconds: 1,
      perOrganization: 1,
      concurrency: 2,
      pollIntervalMs: 20,
      snapshotWaitMs: 1000,
      releaseLeasesAtStart: false,
      busy: () => false,
    })
    try {
      const org = await newOrganization(small)
      const doctor = await org.user('PROVIDER')
      const nurse = await org.user('NURSE')
      const patients: number[] = []
      for (let i = 0; i < 5; i++) patients.push(await createPatient(small, nurse))
      const started = await small.inject({
        url: '/fhir/R4/$export?_type=Patient',
        headers: { ...bearer(doctor.token), ...ASYNC },
      })
      const id = String(started.headers['content-location']).split('/').at(-1) as string
      await worker.start()
      const deadline = Date.now() + 30_000
      const statusOf = () =>
        small.db.selectFrom('bulk_exports').select('status').where('id', '=', id).executeTakeFirstOrThrow()
      while ((await statusOf()).status !== 'completed' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      await worker.stop()
      expect(errors).toEqual([])
      expect((await statusOf()).status).toBe('completed')
      const recorded = await small.db
        .selectFrom('bulk_export_files')
        .select(['sequence', 'storage_key'])
        .where('export_id', '=', id)
        .orderBy('sequence')
        .execute()
      const ids: number[] = []
      for (const file of recorded) {
        let body = ''
        for await (const chunk of await local.read(file.storage_key)) body += chunk
        ids.push(
          ...body
            .split('\n')
            .filter(Boolean)
            .map((line) => Number(JSON.parse(line).id)),
        )
      }
      expect(recorded.map((file) => file.sequence)).toEqual([0, 1, 2, 3, 4])
      expect(ids).toEqual(patients)
    } finally {
      await worker.stop()
      await small.close()
      await rm(files, { recursive: true, force: true })
    }
  })
})
