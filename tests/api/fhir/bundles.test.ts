import type { Bundle, BundleEntry, Patient } from '@medplum/fhirtypes'
import { Client, type FhirResource } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { bearer, newOrganization, type TestUser } from '../../helpers/factories.js'
import { listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'

// Batch and transaction Bundles at the FHIR base, driven by fhir-kit-client.

let app: App
let baseUrl: string
const MRN_SYSTEM = 'urn:oid:2.16.840.1.113883.3.0000.2'
const MAX_ENTRIES = 80

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp({
    FHIR_MRN_SYSTEM: MRN_SYSTEM,
    FHIR_BUNDLE_MAX_ENTRIES: String(MAX_ENTRIES),
    FHIR_BUNDLE_MAX_BYTES: String(200_000),
  }))
})
afterAll(async () => {
  await app.close()
})

let serial = 0
function newPatient(overrides: Partial<Patient> = {}): Patient {
  serial += 1
  return {
    resourceType: 'Patient',
    identifier: [{ system: MRN_SYSTEM, value: `BN${Date.now().toString(36).toUpperCase()}${serial}` }],
    name: [{ family: 'Hopper', given: ['Grace'] }],
    gender: 'female',
    birthDate: '1906-12-09',
    ...overrides,
  }
}

const post = (resource: Patient, fullUrl?: string): BundleEntry => ({
  ...(fullUrl ? { fullUrl } : {}),
  resource,
  request: { method: 'POST', url: 'Patient' },
})

async function admin(): Promise<{ user: TestUser; client: Client }> {
  const org = await newOrganization(app)
  const user = await org.user('ADMIN')
  return { user, client: new Client({ baseUrl, bearerToken: user.token }) }
}

const bundle = (type: 'batch' | 'transaction', entry: BundleEntry[]) =>
  ({ resourceType: 'Bundle', type, entry }) as unknown as FhirResource

async function countsOf(user: TestUser) {
  const count = async (table: 'patients' | 'outbox_events') =>
    Number(
      (
        await app.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .where('organization_id', '=', user.organizationId)
          .executeTakeFirstOrThrow()
      ).count,
    )
  const writes = await app.db
    .selectFrom('audit_log')
    .select('action')
    .where('organization_id', '=', user.organizationId)
    .where('action', 'in', ['CREATE', 'UPDATE', 'DELETE'])
    .execute()
  return { patients: await count('patients'), events: await count('outbox_events'), audited: writes.length }
}

describe('transaction Bundles', () => {
  it('runs every entry in one transaction, in FHIR’s order, and answers each in the request’s order', async () => {
    const { user, client } = await admin()
    const existing = (await client.create({
      resourceType: 'Patient',
      body: newPatient() as FhirResource,
    })) as Patient
    const renamed = { ...existing, name: [{ family: 'Hopper', given: ['Grace', 'Brewster'] }] }
    const patch = [{ op: 'replace', path: '/gender', value: 'other' }]
    const doomed = (await client.create({
      resourceType: 'Patient',
      body: newPatient() as FhirResource,
    })) as Patient
    const response = (await client.transaction({
      body: bundle('transaction', [
        { request: { method: 'GET', url: `Patient/${existing.id}` } },
        post(newPatient(), 'urn:uuid:5b0d2f1e-8f4b-4b43-9a57-6f0f7c1a3f01'),
        { resource: renamed, request: { method: 'PUT', url: `Patient/${existing.id}`, ifMatch: 'W/"1"' } },
        { request: { method: 'DELETE', url: `Patient/${doomed.id}` } },
        post(newPatient()),
      ]),
    })) as unknown as Bundle
    expect(response.type).toBe('transaction-response')
    expect(response.entry?.map((entry) => entry.response?.status)).toEqual([
      '200 OK',
      '201 Created',
      '200 OK',
      '204 No Content',
      '201 Created',
    ])
    // The GET runs last: it reads the update made in the same transaction.
    expect((response.entry?.[0]?.resource as Patient | undefined)?.name?.[0]?.given).toEqual([
      'Grace',
      'Brewster',
    ])
    expect(response.entry?.[2]?.response?.etag).toBe('W/"2"')
    expect(fhirErrors(response)).toEqual([])
    const patched = (await client.transaction({
      body: bundle('transaction', [
        {
          resource: {
            resourceType: 'Binary',
            contentType: 'application/json-patch+json',
            data: Buffer.from(JSON.stringify(patch)).toString('base64'),
          },
          request: { method: 'PATCH', url: `Patient/${existing.id}` },
        },
      ]),
    })) as unknown as Bundle
    expect((patched.entry?.[0]?.resource as Patient | undefined)?.gender).toBe('other')
    expect(await countsOf(user)).toEqual({ patients: 4, events: 7, audited: 7 })
    const rest = await app.inject({ url: `/api/patients/${doomed.id}`, headers: bearer(user.token) })
    expect(rest.statusCode).toBe(404)
  })

  it('stores nothing when its 50th entry fails: no record, no event, no audit record of a write', async () => {
    const { user, client } = await admin()
    const entries = Array.from({ length: 60 }, (_, index) =>
      post(index === 49 ? newPatient({ birthDate: '2199-01-01' }) : newPatient()),
    )
    const { status, outcome } = await refusal(client.transaction({ body: bundle('transaction', entries) }))
    expect(status).toBe(422)
    expect(outcome.issue?.[0]?.expression).toEqual(['Bundle.entry[49].resource.birthDate'])
    expect(fhirErrors(outcome)).toEqual([])
    expect(await countsOf(user)).toEqual({ patients: 0, events: 0, audited: 0 })
  })

  it('names the entry whose resource breaks the R4 base definitions, each checked as sent', async () => {
    const { user, client } = await admin()
    for (const invalid of [0, 1, 6, 9]) {
      const entries = Array.from({ length: 10 }, (_, index) =>
        post(index === invalid ? ({ ...newPatient(), nickname: 'Ada' } as Patient) : newPatient()),
      )
      const { status, outcome } = await refusal(client.transaction({ body: bundle('transaction', entries) }))
      expect(status, `entry ${invalid}`).toBe(422)
      expect(outcome.issue).toEqual([
        expect.objectContaining({
          expression: [`Bundle.entry[${invalid}].resource.nickname`],
          // The R4 definitions' word, not the service's (an element it cannot store).
          diagnostics: `Bundle.entry[${invalid}].resource.nickname Invalid additional property "nickname"`,
        }),
      ])
    }
    expect(await countsOf(user)).toEqual({ patients: 0, events: 0, audited: 0 })
  })

  it('answers 400 naming the entry whose resource is no resource at all, wherever it is', async () => {
    const { user, client } = await admin()
    for (const resource of ['a Patient', 42, [newPatient()]]) {
      const entries = [post(newPatient()), { resource, request: { method: 'POST', url: 'Patient' } }]
      const { status, outcome } = await refusal(
        client.transaction({ body: bundle('transaction', entries as BundleEntry[]) }),
      )
      expect(status, JSON.stringify(resource)).toBe(400)
      expect(outcome.issue?.[0]?.expression).toEqual(['Bundle.entry[1]'])
    }
    expect(await countsOf(user)).toEqual({ patients: 0, events: 0, audited: 0 })
  })

  it('refuses an oversized Bundle (413) and a nested one (400), storing nothing', async () => {
    const { user, client } = await admin()
    const tooMany = Array.from({ length: MAX_ENTRIES + 1 }, () => post(newPatient()))
    expect((await refusal(client.transaction({ body: bundle('transaction', tooMany) }))).status).toBe(413)
    const tooLarge = [post(newPatient({ name: [{ family: 'x'.repeat(210_000), given: ['A'] }] }))]
    expect((await refusal(client.transaction({ body: bundle('transaction', tooLarge) }))).status).toBe(413)
    const nested = [
      post(newPatient()),
      {
        resource: { resourceType: 'Bundle', type: 'collection' },
        request: { method: 'POST', url: 'Bundle' },
      },
    ] as BundleEntry[]
    const refused = await refusal(client.transaction({ body: bundle('transaction', nested) }))
    expect(refused.status).toBe(400)
    expect(refused.outcome.issue?.[0]?.diagnostics).toMatch(/nested/)
    expect(await countsOf(user)).toEqual({ patients: 0, events: 0, audited: 0 })
  })

  it('fails whole on a conditional reference that matches nothing, and on an interaction a type does not take', async () => {
    const { client } = await admin()
    // Practitioners are never deleted.
    const notTaken = await refusal(
      client.transaction({
        body: bundle('transaction', [
          post(newPatient()),
          { request: { method: 'DELETE', url: 'Practitioner/1' } },
        ] as BundleEntry[]),
      }),
    )
    expect(notTaken.status).toBe(405)
    expect(notTaken.outcome.issue?.[0]?.expression).toEqual(['Bundle.entry[1]'])
  })
})

describe('batch Bundles', () => {
  it('runs each entry on its own: one failing leaves the others done, each with its status', async () => {
    const { user, client } = await admin()
    const response = (await client.batch({
      body: bundle('batch', [
        post(newPatient()),
        post(newPatient({ gender: 'x' as Patient['gender'] })),
        { request: { method: 'GET', url: 'Patient/999999' } },
        post(newPatient()),
      ]),
    })) as unknown as Bundle
    expect(response.type).toBe('batch-response')
    const statuses = response.entry?.map((entry) => entry.response?.status)
    expect(statuses?.[0]).toBe('201 Created')
    expect(statuses?.[1]).toMatch(/^422/)
    expect(statuses?.[2]).toMatch(/^40[34]/)
    expect(statuses?.[3]).toBe('201 Created')
    expect(response.entry?.[1]?.response?.outcome?.resourceType).toBe('OperationOutcome')
    expect(fhirErrors(response)).toEqual([])
    expect((await countsOf(user)).patients).toBe(2)
  })

  it('needs the roles of each entry’s REST route', async () => {
    const org = await newOrganization(app)
    const billing = await org.user('BILLING')
    const client = new Client({ baseUrl, bearerToken: billing.token })
    const response = (await client.batch({
      body: bundle('batch', [post(newPatient())]),
    })) as unknown as Bundle
    expect(response.entry?.[0]?.response?.status).toBe('403 Forbidden')
  })
})

describe('a transaction of several types', () => {
  it('creates a practitioner (whose service writes in a transaction of its own) with a patient, all or nothing', async () => {
    const { user, client } = await admin()
    const practitioner = {
      resourceType: 'Practitioner',
      extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/timezone', valueCode: 'America/Chicago' }],
      identifier: [{ system: 'http://hl7.org/fhir/sid/us-npi', value: '1234567893' }],
      name: [{ use: 'official', family: 'Hopper', given: ['Grace'] }],
    }
    const failing = await refusal(
      client.transaction({
        body: bundle('transaction', [
          { resource: practitioner, request: { method: 'POST', url: 'Practitioner' } },
          post(newPatient({ birthDate: '2199-01-01' })),
        ] as BundleEntry[]),
      }),
    )
    expect(failing.status).toBe(422)
    const none = await app.db
      .selectFrom('providers')
      .select('id')
      .where('organization_id', '=', user.organizationId)
      .execute()
    expect(none).toEqual([])
    const response = (await client.transaction({
      body: bundle('transaction', [
        { resource: practitioner, request: { method: 'POST', url: 'Practitioner' } },
        post(newPatient()),
      ] as BundleEntry[]),
    })) as unknown as Bundle
    expect(response.entry?.map((entry) => entry.response?.status)).toEqual(['201 Created', '201 Created'])
    const rest = await app.inject({ url: '/api/providers', headers: bearer(user.token) })
    expect(rest.json().data.content.map((provider: { npi: string }) => provider.npi)).toEqual(['1234567893'])
  })
})

describe('references across a transaction', () => {
  it('resolves urn:uuid references to the patient it creates, and conditional references by search', async () => {
    const org = await newOrganization(app)
    const provider = await org.user('PROVIDER', 'ADMIN')
    const client = new Client({ baseUrl, bearerToken: provider.token })
    const patientUrn = 'urn:uuid:0c3f8a52-7d59-4b8e-9b1e-3f4e5a6b7c8d'
    const sent = newPatient()
    const mrn = sent.identifier?.[0]?.value as string
    const condition = (subject: string) => ({
      resourceType: 'Condition',
      clinicalStatus: {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' }],
      },
      verificationStatus: {
        coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status', code: 'confirmed' }],
      },
      category: [
        {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/condition-category',
              code: 'problem-list-item',
              display: 'Problem List Item',
            },
          ],
        },
      ],
      code: {
        coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'E11.9' }],
        text: 'Type 2 diabetes',
      },
      subject: { reference: subject },
    })
    const response = (await client.transaction({
      body: bundle('transaction', [
        // The condition comes first in the Bundle; the patient it references is created before it.
        { resource: condition(patientUrn), request: { method: 'POST', url: 'Condition' } } as BundleEntry,
        post(sent, patientUrn),
      ]),
    })) as unknown as Bundle
    expect(response.entry?.map((entry) => entry.response?.status)).toEqual(['201 Created', '201 Created'])
    const patientId = response.entry?.[1]?.response?.location?.split('/')[1]
    const stored = response.entry?.[0]?.resource as { subject?: { reference?: string } } | undefined
    expect(stored?.subject?.reference).toBe(`Patient/${patientId}`)

    const byIdentifier = `Patient?identifier=${encodeURIComponent(`${MRN_SYSTEM}|${mrn}`)}`
    const conditional = (await client.transaction({
      body: bundle('transaction', [
        { resource: condition(byIdentifier), request: { method: 'POST', url: 'Condition' } } as BundleEntry,
      ]),
    })) as unknown as Bundle
    const second = conditional.entry?.[0]?.resource as { subject?: { reference?: string } } | undefined
    expect(second?.subject?.reference).toBe(`Patient/${patientId}`)
    const missing = await refusal(
      client.transaction({
        body: bundle('transaction', [
          {
            resource: condition(`Patient?identifier=${encodeURIComponent(`${MRN_SYSTEM}|NOSUCH`)}`),
            request: { method: 'POST', url: 'Condition' },
          } as BundleEntry,
        ]),
      }),
    )
    expect(missing.status).toBe(412)
    expect(missing.outcome.issue?.[0]?.expression).toEqual(['Bundle.entry[0]'])
  })
})
