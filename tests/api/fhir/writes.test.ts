import type { CapabilityStatement, OperationOutcome, Patient } from '@medplum/fhirtypes'
import fc from 'fast-check'
import { Client } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Role } from '../../../src/access/roles.js'
import type { App } from '../../../src/app.js'
import { bearer, createPatient, newOrganization, type TestUser, tokenFor } from '../../helpers/factories.js'
import { asSent, headersOf, listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { days, expectStoredAsSent, word } from '../../helpers/fhir-properties.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'

// FHIR create, update, patch and delete of patients, driven by fhir-kit-client.

let app: App
let baseUrl: string
const MRN_SYSTEM = 'urn:oid:2.16.840.1.113883.3.0000.1'

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp({ FHIR_MRN_SYSTEM: MRN_SYSTEM }))
})
afterAll(async () => {
  await app.close()
})

const clientFor = (token: string) => new Client({ baseUrl, bearerToken: token })

/** A Patient as an integrator would send one. */
function newPatient(overrides: Partial<Patient> = {}): Patient {
  return {
    resourceType: 'Patient',
    identifier: [{ system: MRN_SYSTEM, value: `FH${Math.random().toString(36).slice(2, 12).toUpperCase()}` }],
    name: [{ use: 'official', family: 'Lovelace', given: ['Ada', 'Augusta'] }],
    gender: 'female',
    birthDate: '1985-12-10',
    telecom: [
      { system: 'phone', value: '+1 555 010 2233' },
      { system: 'email', value: 'ada@example.test' },
    ],
    address: [
      { line: ['12 Analytical Row'], city: 'Springfield', state: 'IL', postalCode: '62704', country: 'US' },
    ],
    ...overrides,
  }
}

/** A new organization's user with these roles (front desk by default), and a client with their token. */
async function clerk(...roles: Role[]): Promise<{ user: TestUser; client: Client }> {
  const org = await newOrganization(app)
  const user = await org.user(...(roles.length > 0 ? roles : (['FRONT_DESK'] as Role[])))
  return { user, client: clientFor(user.token) }
}

describe('FHIR create', () => {
  it('registers the patient as POST /api/patients would, with its location, ETag, event and audit record', async () => {
    const { user, client } = await clerk()
    const sent = newPatient()
    const created = (await client.create({ resourceType: 'Patient', body: asSent(sent) })) as Patient
    expect(fhirErrors(created)).toEqual([])
    const id = Number(created.id)
    expect(created.meta?.versionId).toBe('1')
    const headers = headersOf(created)
    expect(headers.get('location')).toBe(`${baseUrl}/Patient/${id}/_history/1`)
    expect(headers.get('etag')).toBe('W/"1"')
    expect(created.name).toEqual(sent.name)
    expect(created.identifier?.[0]?.value).toBe(sent.identifier?.[0]?.value)

    const rest = await app.inject({ url: `/api/patients/${id}`, headers: bearer(user.token) })
    expect(rest.statusCode).toBe(200)
    expect(rest.json().data).toMatchObject({
      mrn: sent.identifier?.[0]?.value,
      identification: { firstName: 'Ada', middleName: 'Augusta', lastName: 'Lovelace', gender: 'Female' },
      contact: {
        email: 'ada@example.test',
        phoneNumber: '+1 555 010 2233',
        address: { city: 'Springfield' },
      },
    })
    const events = await app.db
      .selectFrom('outbox_events')
      .select(['event_type', 'payload'])
      .where('organization_id', '=', user.organizationId)
      .execute()
    expect(events.map((event) => event.event_type)).toEqual(['patient.created'])
    const audit = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_type', 'resource_ids', 'status_code', 'outcome'])
      .where('organization_id', '=', user.organizationId)
      .where('action', '=', 'CREATE')
      .execute()
    expect(audit).toEqual([
      {
        action: 'CREATE',
        resource_type: 'patient',
        resource_ids: [id],
        status_code: 201,
        outcome: 'SUCCESS',
      },
    ])
  })

  it('answers as Prefer asks: nothing, or an OperationOutcome', async () => {
    const { client } = await clerk()
    const minimal = await client.create({
      resourceType: 'Patient',
      body: asSent(newPatient()),
      options: { headers: { prefer: 'return=minimal' } },
    })
    expect(Object.keys(minimal as object)).toEqual([])
    expect(headersOf(minimal).get('location')).toMatch(/\/Patient\/[0-9]+\/_history\/1$/)
    const outcome = (await client.create({
      resourceType: 'Patient',
      body: asSent(newPatient()),
      options: { headers: { prefer: 'return=OperationOutcome' } },
    })) as unknown as OperationOutcome
    expect(outcome.resourceType).toBe('OperationOutcome')
    expect(outcome.issue?.[0]?.severity).toBe('information')
  })

  it('with If-None-Exist, answers the one match instead of creating another, and 412 for several', async () => {
    const { user, client } = await clerk()
    const sent = newPatient()
    const mrn = sent.identifier?.[0]?.value as string
    const first = (await client.create({ resourceType: 'Patient', body: asSent(sent) })) as Patient
    const again = (await client.create({
      resourceType: 'Patient',
      body: asSent(sent),
      options: { headers: { 'if-none-exist': `identifier=${MRN_SYSTEM}|${mrn}` } },
    })) as Patient
    expect(again.id).toBe(first.id)
    const count = await app.db
      .selectFrom('patients')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('organization_id', '=', user.organizationId)
      .executeTakeFirstOrThrow()
    expect(Number(count.count)).toBe(1)
    await client.create({ resourceType: 'Patient', body: asSent(newPatient()) })
    const several = await refusal(
      client.create({
        resourceType: 'Patient',
        body: asSent(newPatient()),
        options: { headers: { 'if-none-exist': 'family=Lovelace' } },
      }),
    )
    expect(several.status).toBe(412)
    const unknown = await refusal(
      client.create({
        resourceType: 'Patient',
        body: asSent(newPatient()),
        options: { headers: { 'if-none-exist': 'nickname=Ada' } },
      }),
    )
    expect(unknown.status).toBe(400)
  })

  it('refuses an element the service cannot store (422, naming it), and stores nothing', async () => {
    const { user, client } = await clerk()
    const cases: [Patient, string[]][] = [
      [newPatient({ multipleBirthBoolean: true }), ['Patient.multipleBirthBoolean']],
      [
        newPatient({ name: [{ use: 'official', family: 'Lovelace', given: ['Ada', 'Augusta', 'King'] }] }),
        ['Patient.name[0].given[2]'],
      ],
      [
        newPatient({
          telecom: [
            { system: 'phone', value: '+1 555 010 2233' },
            { system: 'fax', value: '+1 555 010 9999' },
          ],
        }),
        ['Patient.telecom[1]'],
      ],
      [newPatient({ identifier: [{ system: 'urn:other', value: 'X1' }] }), ['Patient.identifier[0]']],
    ]
    for (const [body, expressions] of cases) {
      const { status, outcome } = await refusal(
        client.create({ resourceType: 'Patient', body: asSent(body) }),
      )
      expect(status, expressions.join()).toBe(422)
      expect(outcome.issue?.flatMap((issue) => issue.expression ?? [])).toEqual(expressions)
      expect(fhirErrors(outcome)).toEqual([])
    }
    const stored = await app.db
      .selectFrom('patients')
      .select('id')
      .where('organization_id', '=', user.organizationId)
      .execute()
    expect(stored).toEqual([])
  })

  it('refuses what the R4 definitions or the service rules refuse, naming the element', async () => {
    const { client } = await clerk()
    const invalidDate = await refusal(
      client.create({ resourceType: 'Patient', body: asSent(newPatient({ birthDate: '1985-13-10' })) }),
    )
    expect(invalidDate.status).toBe(422)
    expect(invalidDate.outcome.issue?.[0]?.expression).toEqual(['Patient.birthDate'])
    const future = await refusal(
      client.create({ resourceType: 'Patient', body: asSent(newPatient({ birthDate: '2199-01-01' })) }),
    )
    expect(future.status).toBe(422)
    expect(future.outcome.issue?.[0]?.expression).toEqual(['Patient.birthDate'])
    const noGender = newPatient()
    delete noGender.gender
    const missing = await refusal(client.create({ resourceType: 'Patient', body: asSent(noGender) }))
    expect(missing.status).toBe(422)
    expect(missing.outcome.issue?.map((issue) => issue.expression?.[0])).toContain('Patient.gender')
    const unknownElement = await refusal(
      client.create({
        resourceType: 'Patient',
        body: asSent({ ...newPatient(), nickname: 'Ada' } as Patient),
      }),
    )
    expect(unknownElement.status).toBe(422)
    expect(unknownElement.outcome.issue?.[0]?.expression).toEqual(['Patient.nickname'])
  })

  it('refuses another resource type than the URL names (400) and a duplicate MRN (409)', async () => {
    const { client } = await clerk()
    const wrongType = await refusal(
      client.create({
        resourceType: 'Patient',
        body: { resourceType: 'Practitioner', name: [{ family: 'X' }] },
      }),
    )
    expect(wrongType.status).toBe(400)
    const sent = newPatient()
    await client.create({ resourceType: 'Patient', body: asSent(sent) })
    const duplicate = await refusal(client.create({ resourceType: 'Patient', body: asSent(sent) }))
    expect(duplicate.status).toBe(409)
    expect(duplicate.outcome.resourceType).toBe('OperationOutcome')
  })

  it('needs a role that may register patients and a scope that may create them', async () => {
    const org = await newOrganization(app)
    const billing = await org.user('BILLING')
    expect(
      (
        await refusal(
          clientFor(billing.token).create({ resourceType: 'Patient', body: asSent(newPatient()) }),
        )
      ).status,
    ).toBe(403)
    const clerkUser = await org.user('FRONT_DESK')
    const scoped = (scopes: string[]) => clientFor(tokenFor(app, clerkUser, undefined, { scopes }))
    const readOnly = await refusal(
      scoped(['user/Patient.rs']).create({ resourceType: 'Patient', body: asSent(newPatient()) }),
    )
    expect(readOnly.status).toBe(403)
    const updateOnly = await refusal(
      scoped(['user/Patient.u']).create({ resourceType: 'Patient', body: asSent(newPatient()) }),
    )
    expect(updateOnly.status).toBe(403)
    for (const scopes of [['user/Patient.c'], ['user/Patient.write'], ['user/*.*']]) {
      const created = (await scoped(scopes).create({
        resourceType: 'Patient',
        body: asSent(newPatient()),
      })) as Patient
      expect(created.id, scopes.join()).toBeDefined()
    }
  })
})

describe('the CapabilityStatement', () => {
  it('lists the write interactions of the types that take them, and only those', async () => {
    const statement = (await new Client({ baseUrl }).capabilityStatement()) as unknown as CapabilityStatement
    const resources = statement.rest?.[0]?.resource ?? []
    const patient = resources.find((resource) => resource.type === 'Patient')
    expect(patient?.interaction?.map((interaction) => interaction.code)).toEqual(
      expect.arrayContaining(['create', 'update', 'patch', 'delete']),
    )
    expect([patient?.conditionalCreate, patient?.conditionalUpdate, patient?.conditionalDelete]).toEqual([
      true,
      true,
      'single',
    ])
    const readOnly = resources.filter((resource) => !resource.interaction?.some((i) => i.code === 'create'))
    expect(readOnly.length).toBeGreaterThan(0)
    for (const resource of readOnly) {
      const codes = resource.interaction?.map((interaction) => interaction.code) ?? []
      expect(codes, resource.type).not.toContain('update')
      const written = await fetch(`${baseUrl}/${resource.type}`, {
        method: 'POST',
        headers: { 'content-type': 'application/fhir+json' },
        body: JSON.stringify({ resourceType: resource.type }),
      })
      expect([404, 405], resource.type).toContain(written.status)
    }
  })
})

describe('FHIR update, patch and delete', () => {
  it('updates with If-Match, refuses a stale one (412), and a resource written back unchanged makes no version', async () => {
    const { user, client } = await clerk()
    const created = (await client.create({ resourceType: 'Patient', body: asSent(newPatient()) })) as Patient
    const id = created.id as string
    const renamed = { ...created, name: [{ use: 'official' as const, family: 'Byron', given: ['Ada'] }] }
    const updated = (await client.update({
      resourceType: 'Patient',
      id,
      body: asSent(renamed),
      options: { headers: { 'if-match': 'W/"1"' } },
    })) as Patient
    expect(updated.meta?.versionId).toBe('2')
    expect(updated.name?.[0]?.family).toBe('Byron')
    expect(headersOf(updated).get('etag')).toBe('W/"2"')

    const stale = await refusal(
      client.update({
        resourceType: 'Patient',
        id,
        body: asSent(renamed),
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(stale.status).toBe(412)

    const unchanged = (await client.update({ resourceType: 'Patient', id, body: asSent(updated) })) as Patient
    expect(unchanged.meta?.versionId).toBe('2')
    const events = await app.db
      .selectFrom('outbox_events')
      .select('event_type')
      .where('organization_id', '=', user.organizationId)
      .execute()
    expect(events.map((event) => event.event_type)).toEqual(['patient.created', 'patient.updated'])
    const history = await client.history({ resourceType: 'Patient', id })
    expect((history as { total?: number }).total).toBe(2)
  })

  it('refuses a body whose id is not the URL’s (400), and another organization’s patient (403)', async () => {
    const { client } = await clerk()
    const created = (await client.create({ resourceType: 'Patient', body: asSent(newPatient()) })) as Patient
    const otherId = await refusal(
      client.update({
        resourceType: 'Patient',
        id: created.id as string,
        body: asSent({ ...created, id: '999999' }),
      }),
    )
    expect(otherId.status).toBe(400)
    const other = await clerk('ADMIN')
    const foreign = await refusal(
      other.client.update({ resourceType: 'Patient', id: created.id as string, body: asSent(created) }),
    )
    expect(foreign.status).toBe(403)
    const foreignDelete = await refusal(
      other.client.delete({ resourceType: 'Patient', id: created.id as string }),
    )
    expect(foreignDelete.status).toBe(403)
  })

  it('patches with JSON Patch, checks the result like an update, and honours test operations', async () => {
    const { client } = await clerk()
    const created = (await client.create({ resourceType: 'Patient', body: asSent(newPatient()) })) as Patient
    const id = created.id as string
    const patched = (await client.patch({
      resourceType: 'Patient',
      id,
      jsonPatch: [
        { op: 'test', path: '/name/0/family', value: 'Lovelace' },
        { op: 'replace', path: '/name/0/family', value: 'King' },
        { op: 'remove', path: '/telecom/1' },
      ],
    })) as Patient
    expect(patched.meta?.versionId).toBe('2')
    expect(patched.name?.[0]?.family).toBe('King')
    // The e-mail address comes first, as the service orders them.
    expect(patched.telecom).toEqual([{ system: 'email', value: 'ada@example.test' }])
    const failedTest = await refusal(
      client.patch({
        resourceType: 'Patient',
        id,
        jsonPatch: [{ op: 'test', path: '/name/0/family', value: 'Lovelace' }],
      }),
    )
    expect(failedTest.status).toBe(422)
    const unstorable = await refusal(
      client.patch({
        resourceType: 'Patient',
        id,
        jsonPatch: [{ op: 'add', path: '/multipleBirthInteger', value: 2 }],
      }),
    )
    expect(unstorable.status).toBe(422)
    expect(unstorable.outcome.issue?.[0]?.expression).toEqual(['Patient.multipleBirthInteger'])
    const stale = await refusal(
      client.patch({
        resourceType: 'Patient',
        id,
        jsonPatch: [{ op: 'replace', path: '/gender', value: 'other' }],
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(stale.status).toBe(412)
  })

  it('deletes: the patient is gone (410), a second delete changes nothing, and REST sees it deleted', async () => {
    const { user, client } = await clerk('ADMIN')
    const created = (await client.create({ resourceType: 'Patient', body: asSent(newPatient()) })) as Patient
    const id = created.id as string
    await client.delete({ resourceType: 'Patient', id })
    expect((await refusal(client.read({ resourceType: 'Patient', id }))).status).toBe(410)
    await client.delete({ resourceType: 'Patient', id })
    const rest = await app.inject({ url: `/api/patients/${id}`, headers: bearer(user.token) })
    expect(rest.statusCode).toBe(404)
    const audit = await app.db
      .selectFrom('audit_log')
      .select(['action', 'status_code'])
      .where('organization_id', '=', user.organizationId)
      .where('action', '=', 'DELETE')
      .execute()
    // Both calls are recorded; only the first changed the patient.
    expect(audit).toEqual([
      { action: 'DELETE', status_code: 204 },
      { action: 'DELETE', status_code: 204 },
    ])
  })

  it('updates and deletes conditionally on a search matching one patient; creates on none; 412 on several', async () => {
    const { user, client } = await clerk('ADMIN')
    const sent = newPatient()
    const mrn = sent.identifier?.[0]?.value as string
    const searchParams = { identifier: `${MRN_SYSTEM}|${mrn}` }
    const created = (await client.update({
      resourceType: 'Patient',
      searchParams,
      body: asSent(sent),
    })) as Patient
    expect(created.meta?.versionId).toBe('1')
    const updated = (await client.update({
      resourceType: 'Patient',
      searchParams,
      body: asSent({ ...sent, gender: 'other' }),
    })) as Patient
    expect([updated.id, updated.meta?.versionId, updated.gender]).toEqual([created.id, '2', 'other'])
    // One record each: the creation as a creation, the update as an update.
    const audit = await app.db
      .selectFrom('audit_log')
      .select(['action', 'status_code', 'resource_ids'])
      .where('organization_id', '=', user.organizationId)
      .where('action', '!=', 'READ')
      .orderBy('id')
      .execute()
    const ofCreated = audit.filter((row) => row.resource_ids.includes(Number(created.id)))
    expect(ofCreated.map(({ action, status_code }) => ({ action, status_code }))).toEqual([
      { action: 'CREATE', status_code: 201 },
      { action: 'UPDATE', status_code: 200 },
    ])
    await client.create({ resourceType: 'Patient', body: asSent(newPatient()) })
    const several = await refusal(
      client.update({
        resourceType: 'Patient',
        searchParams: { family: 'Lovelace' },
        body: asSent(newPatient()),
      }),
    )
    expect(several.status).toBe(412)
    const deleteUrl = `${baseUrl}/Patient?identifier=${encodeURIComponent(`${MRN_SYSTEM}|${mrn}`)}`
    const deleted = await fetch(deleteUrl, { method: 'DELETE', headers: bearer(user.token) })
    expect(deleted.status).toBe(204)
    expect((await refusal(client.read({ resourceType: 'Patient', id: created.id as string }))).status).toBe(
      410,
    )
  })

  it('limits a patient/ scope to its launch patient', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const own = await createPatient(app, nurse)
    const other = await createPatient(app, nurse)
    const client = clientFor(
      tokenFor(app, nurse, undefined, { scopes: ['patient/Patient.cruds'], patient: String(own) }),
    )
    const mine = (await client.read({ resourceType: 'Patient', id: String(own) })) as Patient
    const written = (await client.update({
      resourceType: 'Patient',
      id: String(own),
      body: asSent({ ...mine, gender: 'unknown' }),
    })) as Patient
    expect(written.gender).toBe('unknown')
    const theirs = (await clientFor(nurse.token).read({
      resourceType: 'Patient',
      id: String(other),
    })) as Patient
    expect(
      (await refusal(client.update({ resourceType: 'Patient', id: String(other), body: asSent(theirs) })))
        .status,
    ).toBe(403)
    expect(
      (await refusal(client.create({ resourceType: 'Patient', body: asSent(newPatient()) }))).status,
    ).toBe(403)
  })
})

describe('FHIR writes of generated patients', () => {
  const status = fc.constantFrom<Partial<Patient>>(
    {},
    { active: true },
    { active: false },
    { deceasedBoolean: true },
  )
  const patient = fc.record(
    {
      family: word,
      given: fc.array(word, { minLength: 1, maxLength: 2 }),
      gender: fc.constantFrom('male', 'female', 'other', 'unknown'),
      birthDate: days('1900-01-01', '2025-12-31'),
      status,
      email: fc.option(
        word.map((name) => `${name.toLowerCase()}@example.test`),
        { nil: undefined },
      ),
      phone: fc.option(fc.stringMatching(/^\+1 555 0[0-9]{2} [0-9]{4}$/), { nil: undefined }),
      city: fc.option(word, { nil: undefined }),
      language: fc.option(fc.constantFrom('en', 'es-MX', 'pl'), { nil: undefined }),
    },
    { requiredKeys: ['family', 'given', 'gender', 'birthDate', 'status'] },
  )

  it('stores every element of each valid patient it is sent, reads back a valid resource, and takes it back unchanged', async () => {
    const { client } = await clerk()
    await fc.assert(
      fc.asyncProperty(patient, async (generated) => {
        const telecom = [
          ...(generated.email ? [{ system: 'email' as const, value: generated.email }] : []),
          ...(generated.phone ? [{ system: 'phone' as const, value: generated.phone }] : []),
        ]
        const sent: Patient = {
          resourceType: 'Patient',
          name: [{ family: generated.family, given: generated.given }],
          gender: generated.gender as Patient['gender'],
          birthDate: generated.birthDate,
          ...generated.status,
          ...(telecom.length > 0 ? { telecom } : {}),
          ...(generated.city ? { address: [{ city: generated.city }] } : {}),
          ...(generated.language
            ? {
                communication: [
                  { language: { coding: [{ system: 'urn:ietf:bcp:47', code: generated.language }] } },
                ],
              }
            : {}),
        }
        await expectStoredAsSent(client, sent)
      }),
      { numRuns: 30 },
    )
  })
})
