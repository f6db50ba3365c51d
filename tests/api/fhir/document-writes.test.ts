import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type {
  Binary,
  Bundle,
  CapabilityStatement,
  DocumentReference,
  OperationOutcome,
} from '@medplum/fhirtypes'
import fc from 'fast-check'
import { Client } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Role } from '../../../src/access/roles.js'
import type { App } from '../../../src/app.js'
import { droppedElements } from '../../../src/modules/fhir/stored-elements.js'
import {
  bearer,
  createPatient,
  newOrganization,
  type TestOrganization,
  type TestUser,
  tokenFor,
} from '../../helpers/factories.js'
import { asSent, headersOf, listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import { createProvider } from '../../helpers/scheduling.js'

// FHIR writes of documents: DocumentReference with its bytes inline, and Binary, driven by
// fhir-kit-client (and fetch where the body is raw bytes).

const MAX_UPLOAD_BYTES = 64 * 1024
const SYSTEM = 'urn:ehr-service:document-category'
const ATTACHMENT = 'DocumentReference.content[0].attachment'

let app: App
let baseUrl: string
let dataDir: string

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'ehr-fhir-document-writes-'))
  ;({ app, baseUrl } = await listeningFhirApp({
    DATA_DIR: dataDir,
    MAX_UPLOAD_BYTES: String(MAX_UPLOAD_BYTES),
    DOCUMENT_RETENTION_DAYS: '0',
  }))
})
afterAll(async () => {
  await app.close()
  await rm(dataDir, { recursive: true, force: true })
})

const clientFor = (token: string) => new Client({ baseUrl, bearerToken: token })
/** A DocumentReference fhir-kit-client answered with. */
const received = (result: unknown) => result as DocumentReference
const expressionsOf = (outcome: OperationOutcome) => outcome.issue?.flatMap((issue) => issue.expression ?? [])

const pdf = (text = 'a lab report') => Buffer.from(`%PDF-1.7\n${text}\n%%EOF\n`)

/** A DocumentReference as an integrator sends one: the bytes inline, base64. An override of undefined leaves an element out. */
function newDocument(patientId: number, overrides: Partial<DocumentReference> = {}): DocumentReference {
  const bytes = pdf()
  const document = {
    resourceType: 'DocumentReference',
    status: 'current',
    category: [{ coding: [{ system: SYSTEM, code: 'LAB_REPORT' }] }],
    subject: { reference: `Patient/${patientId}` },
    description: 'Blood panel',
    content: [
      {
        attachment: {
          contentType: 'application/pdf',
          data: bytes.toString('base64'),
          title: 'blood-panel.pdf',
          size: bytes.length,
        },
      },
    ],
    ...overrides,
  }
  return received(Object.fromEntries(Object.entries(document).filter(([, value]) => value !== undefined)))
}

const withAttachment = (document: DocumentReference, attachment: object): DocumentReference => ({
  ...document,
  content: [{ attachment: { ...document.content[0]?.attachment, ...attachment } }],
})

/** The elements of `sent` that `stored` lacks, but for the inline bytes: a read links to them instead. */
const droppedBut = (sent: DocumentReference, stored: DocumentReference) =>
  droppedElements(withAttachment(sent, { data: undefined }), stored)

interface Practice {
  org: TestOrganization
  provider: TestUser
  /** The provider's Practitioner id. */
  practitioner: number
  patient: number
  client: Client
}

/** A new practice: a provider (with a Practitioner record) and a patient; a client with the provider's token. */
async function practice(): Promise<Practice> {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  const provider = await org.user('PROVIDER')
  const { id: practitioner } = await createProvider(app, admin, { userId: provider.id })
  const patient = await createPatient(app, provider)
  return { org, provider, practitioner, patient, client: clientFor(provider.token) }
}

async function userOf(org: TestOrganization, ...roles: Role[]) {
  const user = await org.user(...roles)
  return { user, client: clientFor(user.token) }
}

const created = async (client: Client, document: DocumentReference, headers: Record<string, string> = {}) =>
  received(
    await client.create({
      resourceType: 'DocumentReference',
      body: asSent(document),
      options: { headers },
    }),
  )

/**
 * The raw bytes Binary/<id> serves. Read in process: after a streamed answer on a kept-alive
 * connection, closing the server waits for the connection's keep-alive timeout.
 */
async function bytesOf(token: string, id: string): Promise<Buffer> {
  const response = await app.inject({ url: `/fhir/R4/Binary/${id}`, headers: bearer(token) })
  expect(response.statusCode).toBe(200)
  return response.rawPayload
}

const storedDocuments = (organizationId: number) =>
  app.db
    .selectFrom('documents')
    .select(['id', 'status'])
    .where('organization_id', '=', organizationId)
    .execute()

describe('DocumentReference create', () => {
  it('stores the inline bytes as an upload would, and answers what a read gives, its Binary the bytes sent', async () => {
    const { org, provider, patient, client } = await practice()
    const sent = newDocument(patient)
    const document = await created(client, sent)
    expect(fhirErrors(document)).toEqual([])
    expect(droppedBut(sent, document)).toEqual([])
    const id = document.id as string
    const headers = headersOf(document)
    expect(headers.get('location')).toBe(
      `${baseUrl}/DocumentReference/${id}/_history/${document.meta?.versionId}`,
    )
    expect(headers.get('etag')).toBe(`W/"${document.meta?.versionId}"`)
    expect(document.content[0]?.attachment).toMatchObject({
      url: `${baseUrl}/Binary/${id}`,
      size: pdf().length,
      title: 'blood-panel.pdf',
      contentType: 'application/pdf',
    })
    // The bytes are served by Binary, never echoed back inline.
    expect(document.content[0]?.attachment.data).toBeUndefined()
    const read = received(
      await client.read({
        resourceType: 'DocumentReference',
        id,
      }),
    )
    expect(read).toEqual(document)
    expect(await bytesOf(provider.token, id)).toEqual(pdf())

    const rest = await app.inject({
      url: `/api/patients/${patient}/documents`,
      headers: bearer(provider.token),
    })
    expect(rest.json().data.content).toMatchObject([
      { id: Number(id), title: 'Blood panel', category: 'LAB_REPORT', fileName: 'blood-panel.pdf' },
    ])
    const audit = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'status_code'])
      .where('organization_id', '=', org.id)
      .where('action', '=', 'CREATE')
      .where('resource_type', '=', 'document')
      .execute()
    expect(audit).toEqual([
      { action: 'CREATE', resource_type: 'document', resource_ids: [Number(id)], status_code: 201 },
    ])
  })

  it('takes the category as type, an encounter as context, and names the provider who stored it as author', async () => {
    const { provider, practitioner, patient, client } = await practice()
    const encounter = await app.inject({
      method: 'POST',
      url: '/api/encounters',
      headers: bearer(provider.token),
      payload: {
        patientId: patient,
        providerId: practitioner,
        encounterDate: '2026-01-05',
        encounterType: 'OFFICE_VISIT',
        chiefComplaint: 'Cough',
      },
    })
    expect(encounter.statusCode, encounter.body).toBe(201)
    const encounterId = encounter.json().data.id as number
    const sent = newDocument(patient, {
      category: undefined,
      type: { coding: [{ system: SYSTEM, code: 'CLINICAL_NOTE' }] },
      context: { encounter: [{ reference: `Encounter/${encounterId}` }] },
    })
    const document = await created(client, sent)
    expect(fhirErrors(document)).toEqual([])
    expect(droppedBut(sent, document)).toEqual([])
    expect(document.category?.[0]?.coding?.[0]?.code).toBe('CLINICAL_NOTE')
    expect(document.author).toEqual([{ reference: `Practitioner/${practitioner}` }])
  })

  it('takes a US Core document: its LOINC type as the category, the practice as custodian', async () => {
    const { org, patient, client } = await practice()
    const sent = newDocument(patient, {
      meta: { profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-documentreference'] },
      category: [
        {
          coding: [
            {
              system: 'http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category',
              code: 'clinical-note',
            },
          ],
        },
      ],
      type: { coding: [{ system: 'http://loinc.org', code: '18748-4' }] },
      custodian: { reference: `Organization/${org.id}` },
    })
    const document = await created(client, sent)
    expect(droppedBut(sent, document)).toEqual([])
    expect(document.category?.[0]?.coding?.[0]?.code).toBe('IMAGING')
    expect(document.custodian).toEqual({ reference: `Organization/${org.id}` })
  })

  it('refuses a content type documents do not take, and bytes that are not of the type said (422), storing nothing', async () => {
    const { org, patient, client } = await practice()
    const zip = await refusal(
      client.create({
        resourceType: 'DocumentReference',
        body: asSent(withAttachment(newDocument(patient), { contentType: 'application/zip' })),
      }),
    )
    expect(zip.status).toBe(422)
    expect(expressionsOf(zip.outcome)).toEqual([`${ATTACHMENT}.contentType`])
    expect(fhirErrors(zip.outcome)).toEqual([])
    const notPng = await refusal(
      client.create({
        resourceType: 'DocumentReference',
        body: asSent(withAttachment(newDocument(patient), { contentType: 'image/png' })),
      }),
    )
    expect(notPng.status).toBe(422)
    expect(expressionsOf(notPng.outcome)).toEqual([`${ATTACHMENT}.data`])
    expect(await storedDocuments(org.id)).toEqual([])
  })

  it('refuses another organization’s patient (403) and a reference to no patient (422)', async () => {
    const { client } = await practice()
    const other = await practice()
    const foreign = await refusal(
      client.create({ resourceType: 'DocumentReference', body: asSent(newDocument(other.patient)) }),
    )
    expect(foreign.status).toBe(403)
    const nobody = await refusal(
      client.create({ resourceType: 'DocumentReference', body: asSent(newDocument(2_000_000_000)) }),
    )
    expect(nobody.status).toBe(422)
    expect(expressionsOf(nobody.outcome)).toEqual(['DocumentReference.subject'])
    const notPatient = await refusal(
      client.create({
        resourceType: 'DocumentReference',
        body: asSent(newDocument(1, { subject: { reference: 'Group/1' } })),
      }),
    )
    expect(notPatient.status).toBe(422)
    expect(expressionsOf(notPatient.outcome)).toEqual(['DocumentReference.subject'])
  })

  it('refuses what it cannot store or what the server sets, naming the element (422)', async () => {
    const { org, patient, client } = await practice()
    const cases: [DocumentReference, string[]][] = [
      [
        newDocument(patient, { identifier: [{ system: 'urn:example', value: 'D1' }] }),
        ['DocumentReference.identifier'],
      ],
      [newDocument(patient, { date: '2026-01-01T00:00:00Z' }), ['DocumentReference.date']],
      // The practice keeps its documents: another custodian is not one it can store.
      [
        newDocument(patient, { custodian: { reference: `Organization/${org.id + 1_000_000}` } }),
        ['DocumentReference.custodian.reference'],
      ],
      [newDocument(patient, { description: undefined }), ['DocumentReference.description']],
      [
        newDocument(patient, { category: [{ coding: [{ system: 'http://loinc.org', code: '11502-2' }] }] }),
        ['DocumentReference.category'],
      ],
      // The attachment the service would store is another (of another size): named whole.
      [withAttachment(newDocument(patient), { size: 1 }), ['DocumentReference.content[0]']],
      [withAttachment(newDocument(patient), { data: undefined, size: undefined }), [`${ATTACHMENT}.data`]],
      [
        withAttachment(newDocument(patient), {
          data: undefined,
          size: undefined,
          url: `${baseUrl}/Binary/1`,
        }),
        [`${ATTACHMENT}.url`],
      ],
    ]
    for (const [document, expressions] of cases) {
      const { status, outcome } = await refusal(
        client.create({ resourceType: 'DocumentReference', body: asSent(document) }),
      )
      expect(status, expressions.join()).toBe(422)
      expect(expressionsOf(outcome), expressions.join()).toEqual(expressions)
      expect(fhirErrors(outcome)).toEqual([])
    }
    expect(await storedDocuments(org.id)).toEqual([])
  })

  it('refuses a document larger than the upload limit with 413, as the REST upload does', async () => {
    const { org, patient, client } = await practice()
    const large = pdf('x'.repeat(MAX_UPLOAD_BYTES))
    const tooLarge = await refusal(
      client.create({
        resourceType: 'DocumentReference',
        body: asSent(
          withAttachment(newDocument(patient), { data: large.toString('base64'), size: undefined }),
        ),
      }),
    )
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.outcome.issue?.[0]?.diagnostics).toContain(String(MAX_UPLOAD_BYTES))
    expect(await storedDocuments(org.id)).toEqual([])
  })

  it('is an upload: reception may store documents, but not have If-None-Exist answer one it may not read', async () => {
    const { org, patient, client } = await practice()
    const first = await created(client, newDocument(patient))
    const reception = await userOf(org, 'FRONT_DESK')
    const stored = await created(reception.client, newDocument(patient, { description: 'Insurance card' }))
    expect(stored.description).toBe('Insurance card')
    const conditional = await refusal(
      reception.client.create({
        resourceType: 'DocumentReference',
        body: asSent(newDocument(patient)),
        options: { headers: { 'if-none-exist': `_id=${first.id}` } },
      }),
    )
    expect(conditional.status).toBe(403)
    const billing = await userOf(org, 'BILLING')
    expect(
      (
        await refusal(
          billing.client.create({ resourceType: 'DocumentReference', body: asSent(newDocument(patient)) }),
        )
      ).status,
    ).toBe(403)
    // A clinician's conditional create answers the document found.
    const again = await created(client, newDocument(patient), { 'if-none-exist': `_id=${first.id}` })
    expect(again.id).toBe(first.id)
  })

  it('is not taken in a Bundle: its bytes are stored outside the database transaction', async () => {
    const { org, patient, client } = await practice()
    const bundle: Bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [{ resource: newDocument(patient), request: { method: 'POST', url: 'DocumentReference' } }],
    }
    const refused = await refusal(client.transaction({ body: asSent(bundle) }))
    expect(refused.status).toBe(422)
    expect(expressionsOf(refused.outcome)).toEqual(['Bundle.entry[0].resource'])
    expect(await storedDocuments(org.id)).toEqual([])
  })
})

describe('DocumentReference update and patch', () => {
  it('writes back what was read as a no-op (200, same version); a stale If-Match is 412', async () => {
    const { org, patient, client: owner } = await practice()
    // Written back by another clinician than the one who stored it: the author stays.
    const { client } = await userOf(org, 'NURSE')
    const document = await created(owner, newDocument(patient))
    const id = document.id as string
    const version = document.meta?.versionId as string
    const unchanged = received(
      await client.update({
        resourceType: 'DocumentReference',
        id,
        body: asSent(document),
        options: { headers: { 'if-match': `W/"${version}"` } },
      }),
    )
    expect(unchanged).toEqual(document)
    expect(fhirErrors(unchanged)).toEqual([])
    expect(headersOf(unchanged).get('etag')).toBe(`W/"${version}"`)
    const patched = received(
      await client.patch({
        resourceType: 'DocumentReference',
        id,
        jsonPatch: [{ op: 'test', path: '/description', value: 'Blood panel' }],
      }),
    )
    expect(patched.meta?.versionId).toBe(version)
    const stale = await refusal(
      client.update({
        resourceType: 'DocumentReference',
        id,
        body: asSent(document),
        options: { headers: { 'if-match': `W/"${Number(version) + 1}"` } },
      }),
    )
    expect(stale.status).toBe(412)
    const row = await app.db
      .selectFrom('documents')
      .select('version')
      .where('id', '=', Number(id))
      .executeTakeFirstOrThrow()
    expect(String(row.version)).toBe(version)
  })

  it('refuses any change: a stored document is immutable (422, naming each element changed)', async () => {
    const { patient, client } = await practice()
    const document = await created(client, newDocument(patient))
    const id = document.id as string
    const retitled = await refusal(
      client.update({
        resourceType: 'DocumentReference',
        id,
        body: asSent({ ...document, description: 'Other' }),
      }),
    )
    expect(retitled.status).toBe(422)
    expect(expressionsOf(retitled.outcome)).toEqual(['DocumentReference.description'])
    expect(retitled.outcome.issue?.[0]?.diagnostics).toContain('create a new DocumentReference')
    const newBytes = await refusal(
      client.update({
        resourceType: 'DocumentReference',
        id,
        body: asSent(
          withAttachment(document, { data: pdf('changed').toString('base64'), size: pdf('changed').length }),
        ),
      }),
    )
    expect(newBytes.status).toBe(422)
    expect(expressionsOf(newBytes.outcome)).toEqual([`${ATTACHMENT}.data`])
    const recategorized = await refusal(
      client.patch({
        resourceType: 'DocumentReference',
        id,
        jsonPatch: [{ op: 'replace', path: '/category/0/coding/0/code', value: 'IMAGING' }],
      }),
    )
    expect(recategorized.status).toBe(422)
    // The bytes sent again, as they are, change nothing either.
    const same = received(
      await client.update({
        resourceType: 'DocumentReference',
        id,
        body: asSent(withAttachment(document, { data: pdf().toString('base64') })),
      }),
    )
    expect(same.meta?.versionId).toBe(document.meta?.versionId)
  })

  it('needs a role that reads documents: reception, which uploads them, may not write one back', async () => {
    const { org, patient, client } = await practice()
    const document = await created(client, newDocument(patient))
    const reception = await userOf(org, 'FRONT_DESK')
    const refused = await refusal(
      reception.client.update({
        resourceType: 'DocumentReference',
        id: document.id as string,
        body: asSent(document),
      }),
    )
    expect(refused.status).toBe(403)
  })
})

describe('DocumentReference delete', () => {
  it('deletes as DELETE /api/documents/{id} does: gone from FHIR, Binary and REST; again changes nothing', async () => {
    const { org, provider, patient, client } = await practice()
    const document = await created(client, newDocument(patient))
    const id = document.id as string
    const nurse = await userOf(org, 'NURSE')
    expect((await refusal(nurse.client.delete({ resourceType: 'DocumentReference', id }))).status).toBe(403)
    const stale = await fetch(`${baseUrl}/DocumentReference/${id}`, {
      method: 'DELETE',
      headers: { ...bearer(provider.token), 'if-match': 'W/"99"' },
    })
    expect(stale.status).toBe(412)
    await client.delete({ resourceType: 'DocumentReference', id })
    expect((await refusal(client.read({ resourceType: 'DocumentReference', id }))).status).toBe(410)
    const binary = await fetch(`${baseUrl}/Binary/${id}`, { headers: bearer(provider.token) })
    expect(binary.status).toBe(410)
    await client.delete({ resourceType: 'DocumentReference', id })
    const rest = await app.inject({
      url: `/api/patients/${patient}/documents`,
      headers: bearer(provider.token),
    })
    expect(rest.json().data.content).toEqual([])
    const audit = await app.db
      .selectFrom('audit_log')
      .select(['action', 'status_code'])
      .where('organization_id', '=', org.id)
      .where('action', '=', 'DELETE')
      .where('outcome', '=', 'SUCCESS')
      .execute()
    expect(audit).toEqual([
      { action: 'DELETE', status_code: 204 },
      { action: 'DELETE', status_code: 204 },
    ])
    // Retention 0: the bytes were purged with the deletion.
    const row = await app.db
      .selectFrom('documents')
      .select(['status', 'purged_at'])
      .where('id', '=', Number(id))
      .executeTakeFirstOrThrow()
    expect(row.status).toBe('DELETED')
    expect(row.purged_at).not.toBeNull()
  })

  it('deletes in a transaction Bundle, its bytes kept while the transaction may still be rolled back', async () => {
    const { provider, patient, client } = await practice()
    const kept = await created(client, newDocument(patient))
    const deleteEntry = (id: string) => ({
      request: { method: 'DELETE' as const, url: `DocumentReference/${id}` },
    })
    const failing: Bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        deleteEntry(kept.id as string),
        { request: { method: 'PUT', url: 'DocumentReference/2000000000' }, resource: kept },
      ],
    }
    expect((await refusal(client.transaction({ body: asSent(failing) }))).status).toBe(404)
    // Rolled back: the document is there, and so are its bytes (retention 0 purges at a deletion).
    expect(await bytesOf(provider.token, kept.id as string)).toEqual(pdf())
    const committed: Bundle = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [deleteEntry(kept.id as string)],
    }
    await client.transaction({ body: asSent(committed) })
    expect(
      (await refusal(client.read({ resourceType: 'DocumentReference', id: kept.id as string }))).status,
    ).toBe(410)
    const row = await app.db
      .selectFrom('documents')
      .select(['status', 'purged_at'])
      .where('id', '=', Number(kept.id))
      .executeTakeFirstOrThrow()
    // Purged by housekeeping, which sees only what was committed.
    expect(row).toEqual({ status: 'DELETED', purged_at: null })
  })

  it('deletes conditionally the one document a search matches', async () => {
    const { provider, patient, client } = await practice()
    const document = await created(client, newDocument(patient))
    const deleted = await fetch(
      `${baseUrl}/DocumentReference?patient=${patient}&category=${encodeURIComponent(`${SYSTEM}|LAB_REPORT`)}`,
      { method: 'DELETE', headers: bearer(provider.token) },
    )
    expect(deleted.status).toBe(204)
    expect(
      (await refusal(client.read({ resourceType: 'DocumentReference', id: document.id as string }))).status,
    ).toBe(410)
  })
})

describe('Binary create', () => {
  const postBinary = (token: string, body: Buffer | string, headers: Record<string, string>) =>
    fetch(`${baseUrl}/Binary`, { method: 'POST', headers: { ...bearer(token), ...headers }, body })

  it('stores raw bytes for the patient of X-Security-Context: 201 at Binary/<id>, a DocumentReference of the same id', async () => {
    const { provider, patient, client } = await practice()
    const bytes = pdf('sent raw')
    const response = await postBinary(provider.token, bytes, {
      'content-type': 'application/pdf',
      'x-security-context': `Patient/${patient}`,
    })
    expect(response.status).toBe(201)
    const location = response.headers.get('location') as string
    const id = /\/Binary\/([0-9]+)\/_history\/[0-9]+$/.exec(location)?.[1] as string
    expect(location).toBe(`${baseUrl}/Binary/${id}/_history/${/[0-9]+$/.exec(location)?.[0]}`)
    expect(fhirErrors((await response.json()) as OperationOutcome)).toEqual([])
    expect(await bytesOf(provider.token, id)).toEqual(bytes)
    const document = received(
      await client.read({
        resourceType: 'DocumentReference',
        id,
      }),
    )
    expect(fhirErrors(document)).toEqual([])
    expect(document).toMatchObject({
      subject: { reference: `Patient/${patient}` },
      category: [{ coding: [{ code: 'OTHER' }] }],
      content: [
        {
          attachment: { contentType: 'application/pdf', size: bytes.length, url: `${baseUrl}/Binary/${id}` },
        },
      ],
    })
    const binary = (await client.read({ resourceType: 'Binary', id })) as unknown as Binary
    expect(fhirErrors(binary)).toEqual([])
  })

  it('takes a Binary resource whose securityContext is the patient', async () => {
    const { provider, patient } = await practice()
    const bytes = Buffer.from('plain notes\n')
    const sent: Binary = {
      resourceType: 'Binary',
      contentType: 'text/plain',
      securityContext: { reference: `Patient/${patient}` },
      data: bytes.toString('base64'),
    }
    const response = await postBinary(provider.token, JSON.stringify(sent), {
      'content-type': 'application/fhir+json',
      prefer: 'return=minimal',
    })
    expect(response.status).toBe(201)
    expect(await response.text()).toBe('')
    const id = /\/Binary\/([0-9]+)\//.exec(response.headers.get('location') as string)?.[1] as string
    expect(await bytesOf(provider.token, id)).toEqual(bytes)
    const asRead = await fetch(`${baseUrl}/Binary/${id}`, {
      headers: { ...bearer(provider.token), accept: 'application/fhir+json' },
    })
    const binary = (await asRead.json()) as Binary
    expect(fhirErrors(binary)).toEqual([])
    expect(binary.data).toBe(sent.data)
  })

  it('refuses a Binary without a patient security context (422), a type documents do not take (415), and too many bytes (413)', async () => {
    const { org, provider, patient } = await practice()
    const noContext = await postBinary(provider.token, pdf(), { 'content-type': 'application/pdf' })
    expect(noContext.status).toBe(422)
    const outcome = (await noContext.json()) as OperationOutcome
    expect(expressionsOf(outcome)).toEqual(['Binary.securityContext'])
    expect(fhirErrors(outcome)).toEqual([])
    const encounterContext = await postBinary(provider.token, pdf(), {
      'content-type': 'application/pdf',
      'x-security-context': 'Encounter/1',
    })
    expect(encounterContext.status).toBe(422)
    const nobody = await postBinary(provider.token, pdf(), {
      'content-type': 'application/pdf',
      'x-security-context': 'Patient/2000000000',
    })
    expect(nobody.status).toBe(422)
    const empty = await postBinary(provider.token, Buffer.alloc(0), {
      'content-type': 'application/pdf',
      'x-security-context': `Patient/${patient}`,
    })
    expect(empty.status).toBe(415)
    const zip = await postBinary(provider.token, Buffer.from('PK\u0003\u0004'), {
      'content-type': 'application/zip',
      'x-security-context': `Patient/${patient}`,
    })
    expect(zip.status).toBe(415)
    // Far more than the limit: refused once the limit is passed, the rest read off the connection.
    const large = await postBinary(provider.token, pdf('x'.repeat(16 * MAX_UPLOAD_BYTES)), {
      'content-type': 'application/pdf',
      'x-security-context': `Patient/${patient}`,
    })
    expect(large.status).toBe(413)
    expect(fhirErrors((await large.json()) as OperationOutcome)).toEqual([])
    const readBack: Binary = {
      resourceType: 'Binary',
      contentType: 'application/pdf',
      securityContext: { reference: 'DocumentReference/1' },
      data: pdf().toString('base64'),
    }
    const wrongContext = await postBinary(provider.token, JSON.stringify(readBack), {
      'content-type': 'application/fhir+json',
    })
    expect(wrongContext.status).toBe(422)
    expect(expressionsOf((await wrongContext.json()) as OperationOutcome)).toEqual(['Binary.securityContext'])
    expect(await storedDocuments(org.id)).toEqual([])
  })

  it('follows the upload’s roles, and a patient/ scope keeps to its launch patient', async () => {
    const { org, patient } = await practice()
    const other = await createPatient(app, (await userOf(org, 'NURSE')).user)
    const billing = await userOf(org, 'BILLING')
    const headers = { 'content-type': 'application/pdf', 'x-security-context': `Patient/${patient}` }
    expect((await postBinary(billing.user.token, pdf(), headers)).status).toBe(403)
    const nurse = await userOf(org, 'NURSE')
    const scoped = tokenFor(app, nurse.user, undefined, {
      scopes: ['patient/DocumentReference.c'],
      patient: String(patient),
    })
    expect((await postBinary(scoped, pdf(), headers)).status).toBe(201)
    const elsewhere = await postBinary(scoped, pdf(), {
      ...headers,
      'x-security-context': `Patient/${other}`,
    })
    expect(elsewhere.status).toBe(403)
  })
})

describe('DocumentReference history', () => {
  it('lists a document’s versions: stored (its create), then deleted; its upload and purge are not versions', async () => {
    const { org, practitioner, patient, client } = await practice()
    const document = await created(client, newDocument(patient))
    const id = document.id as string
    const stored = Number(document.meta?.versionId)
    await client.delete({ resourceType: 'DocumentReference', id })
    const history = (await client.history({ resourceType: 'DocumentReference', id })) as unknown as Bundle
    expect(history.total).toBe(2)
    const entries = history.entry ?? []
    expect(entries.map((entry) => [entry.request?.method, entry.response?.status])).toEqual([
      ['DELETE', '204 No Content'],
      ['POST', '201 Created'],
    ])
    expect(entries[0]?.resource).toBeUndefined()
    expect(entries[0]?.response?.etag).toBe(`W/"${stored + 1}"`)
    const first = received(entries[1]?.resource)
    expect(fhirErrors(first)).toEqual([])
    expect(first).toEqual(document)
    expect(first.author).toEqual([{ reference: `Practitioner/${practitioner}` }])

    // The stored version reads back; the upload's unfinished one and the purge's are not versions.
    const vread = received(
      await client.vread({ resourceType: 'DocumentReference', id, version: String(stored) }),
    )
    expect(vread).toEqual(document)
    for (const version of [stored - 1, stored + 2]) {
      const missing = await refusal(
        client.vread({ resourceType: 'DocumentReference', id, version: String(version) }),
      )
      expect(missing.status).toBe(404)
    }

    const typeHistory = (await client.typeHistory({ resourceType: 'DocumentReference' })) as unknown as Bundle
    expect(typeHistory.entry?.map((entry) => [entry.request?.method, entry.response?.etag])).toEqual([
      ['DELETE', `W/"${stored + 1}"`],
      ['POST', `W/"${stored}"`],
    ])

    const other = await newOrganization(app)
    const stranger = clientFor((await other.user('PROVIDER')).token)
    // A deleted document is missing for everyone but its organization (no owner is told).
    const refused = await refusal(stranger.history({ resourceType: 'DocumentReference', id }))
    expect(refused.status).toBe(404)
    const strangers = (await stranger.typeHistory({ resourceType: 'DocumentReference' })) as unknown as Bundle
    expect(strangers.total).toBe(0)
    const reception = await userOf(org, 'FRONT_DESK')
    expect((await refusal(reception.client.history({ resourceType: 'DocumentReference', id }))).status).toBe(
      403,
    )
  })
})

describe('the CapabilityStatement', () => {
  it('lists DocumentReference writes and Binary create', async () => {
    const statement = (await new Client({ baseUrl }).capabilityStatement()) as unknown as CapabilityStatement
    const resources = statement.rest?.[0]?.resource ?? []
    const codes = (type: string) =>
      resources
        .find((resource) => resource.type === type)
        ?.interaction?.map((interaction) => interaction.code)
    expect(codes('DocumentReference')).toEqual(
      expect.arrayContaining(['create', 'update', 'patch', 'delete']),
    )
    expect(codes('Binary')).toEqual(['read', 'vread', 'create'])
  })
})

describe('FHIR writes of generated documents', () => {
  const TYPES: Record<string, (body: Uint8Array) => Buffer> = {
    'application/pdf': (body) => Buffer.concat([Buffer.from('%PDF-1.4\n'), body]),
    'image/png': (body) =>
      Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), body]),
    'image/jpeg': (body) => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), body]),
    'image/tiff': (body) => Buffer.concat([Buffer.from([0x49, 0x49, 0x2a, 0x00]), body]),
    'application/dicom': (body) => Buffer.concat([Buffer.alloc(128), Buffer.from('DICM'), body]),
    // Text: printable ASCII only, which is valid UTF-8 without NUL.
    'text/plain': (body) => Buffer.from([...body].map((byte) => 0x20 + (byte % 0x5f))),
  }
  const document = fc.record({
    contentType: fc.constantFrom(...Object.keys(TYPES)),
    body: fc.uint8Array({ minLength: 1, maxLength: 2048 }),
    title: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 ,.()-]{0,60}[A-Za-z0-9)]$/),
    fileName: fc.option(fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,30}\.[a-z]{3}$/), { nil: undefined }),
    category: fc.constantFrom('LAB_REPORT', 'IMAGING', 'CONSENT', 'REFERRAL', 'CLINICAL_NOTE', 'OTHER'),
  })

  it('stores every element of each valid document, reads it back as created, and its bytes as sent', async () => {
    const { provider, patient, client } = await practice()
    await fc.assert(
      fc.asyncProperty(document, async (generated) => {
        const bytes = (TYPES[generated.contentType] as (body: Uint8Array) => Buffer)(generated.body)
        const sent: DocumentReference = {
          resourceType: 'DocumentReference',
          status: 'current',
          category: [{ coding: [{ system: SYSTEM, code: generated.category }] }],
          subject: { reference: `Patient/${patient}` },
          description: generated.title,
          content: [
            {
              attachment: {
                contentType: generated.contentType,
                data: bytes.toString('base64'),
                ...(generated.fileName ? { title: generated.fileName } : {}),
              },
            },
          ],
        }
        const answer = await created(client, sent)
        const read = received(
          await client.read({
            resourceType: 'DocumentReference',
            id: answer.id as string,
          }),
        )
        expect(fhirErrors(read)).toEqual([])
        expect(droppedBut(sent, read)).toEqual([])
        expect(read).toEqual(answer)
        expect(await bytesOf(provider.token, answer.id as string)).toEqual(bytes)
      }),
      { numRuns: 15 },
    )
  })
})
