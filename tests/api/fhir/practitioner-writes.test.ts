import type { CapabilityStatement, ContactPoint, OperationOutcome, Practitioner } from '@medplum/fhirtypes'
import fc from 'fast-check'
import { Client } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROLES, type Role } from '../../../src/access/roles.js'
import { ROUTE_ACCESS } from '../../../src/access/route-access.js'
import type { App } from '../../../src/app.js'
import {
  bearer,
  everyDay,
  newOrganization,
  npiOf,
  providerBody,
  type TestOrganization,
  type TestUser,
  tokenFor,
  uniqueNpi,
} from '../../helpers/factories.js'
import { asSent, headersOf, listeningFhirApp, refusal } from '../../helpers/fhir-client.js'
import { expectStoredAsSent, freeText, optional, word } from '../../helpers/fhir-properties.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'

// FHIR create, update and patch of practitioners (the providers), driven by fhir-kit-client.

let app: App
let baseUrl: string
const NPI_SYSTEM = 'http://hl7.org/fhir/sid/us-npi'
const TIME_ZONE = 'http://hl7.org/fhir/StructureDefinition/timezone'

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp())
})
afterAll(async () => {
  await app.close()
})

const clientFor = (token: string) => new Client({ baseUrl, bearerToken: token })

/** A Practitioner as an integrator would send one: a provider in New York. */
function newPractitioner(overrides: Partial<Practitioner> = {}): Practitioner {
  return {
    resourceType: 'Practitioner',
    extension: [{ url: TIME_ZONE, valueCode: 'America/New_York' }],
    identifier: [{ system: NPI_SYSTEM, value: uniqueNpi() }],
    active: true,
    name: [{ use: 'official', family: 'Curie', given: ['Marie'], suffix: ['MD'] }],
    telecom: [
      { system: 'email', value: 'mcurie@clinic.example', use: 'work' },
      { system: 'phone', value: '+1 555 010 3000', use: 'work' },
    ],
    qualification: [{ code: { text: 'MD' } }, { code: { text: 'Radiology' } }],
    ...overrides,
  }
}

const expressions = (outcome: OperationOutcome) => outcome.issue?.flatMap((issue) => issue.expression ?? [])

/** A new organization's administrator (who sets up providers), and a client with their token. */
async function administrator(): Promise<{ org: TestOrganization; admin: TestUser; client: Client }> {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  return { org, admin, client: clientFor(admin.token) }
}

const created = async (client: Client, sent: Practitioner = newPractitioner()) =>
  (await client.create({ resourceType: 'Practitioner', body: asSent(sent) })) as Practitioner

const restProvider = async (user: TestUser, id: string | number) => {
  const response = await app.inject({ url: `/api/providers/${id}`, headers: bearer(user.token) })
  expect(response.statusCode, response.body).toBe(200)
  return response.json().data
}

const providerCount = async (organizationId: number) =>
  Number(
    (
      await app.db
        .selectFrom('providers')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('organization_id', '=', organizationId)
        .executeTakeFirstOrThrow()
    ).count,
  )

describe('FHIR create of a Practitioner', () => {
  it('adds the provider as POST /api/providers would, with its location and ETag; the read answers what was sent', async () => {
    const { admin, client } = await administrator()
    const sent = newPractitioner()
    const practitioner = await created(client, sent)
    const id = practitioner.id as string
    expect(practitioner.meta?.versionId).toBe('1')
    const headers = headersOf(practitioner)
    expect(headers.get('location')).toBe(`${baseUrl}/Practitioner/${id}/_history/1`)
    expect(headers.get('etag')).toBe('W/"1"')

    const read = (await client.read({ resourceType: 'Practitioner', id })) as Practitioner
    expect(fhirErrors(read)).toEqual([])
    const { id: _id, meta: _meta, ...stored } = read
    expect(stored).toEqual(sent)

    expect(await restProvider(admin, id)).toMatchObject({
      firstName: 'Marie',
      lastName: 'Curie',
      title: 'MD',
      specialty: 'Radiology',
      npi: sent.identifier?.[0]?.value,
      email: 'mcurie@clinic.example',
      phoneNumber: '+1 555 010 3000',
      active: true,
      timeZone: 'America/New_York',
      slotMinutes: 30,
      weeklyHours: [],
      userId: null,
      version: 1,
    })
  })

  it('takes a provider with only a name, an NPI and a time zone, and one that is inactive', async () => {
    const { admin, client } = await administrator()
    const bare = await created(client, {
      resourceType: 'Practitioner',
      extension: [{ url: TIME_ZONE, valueCode: 'UTC' }],
      identifier: [{ system: NPI_SYSTEM, value: uniqueNpi() }],
      name: [{ family: 'Salk', given: ['Jonas'] }],
    })
    expect(fhirErrors(bare)).toEqual([])
    expect([bare.active, bare.qualification, bare.telecom]).toEqual([true, undefined, undefined])
    expect(await restProvider(admin, bare.id as string)).toMatchObject({ title: null, specialty: null })
    // A specialty without a title: the one qualification, and no suffix.
    const specialist = await created(
      client,
      newPractitioner({
        active: false,
        name: [{ family: 'Curie', given: ['Marie'] }],
        qualification: [{ code: { text: 'Radiology' } }],
      }),
    )
    expect(specialist.active).toBe(false)
    expect(await restProvider(admin, specialist.id as string)).toMatchObject({
      title: null,
      specialty: 'Radiology',
      active: false,
    })
  })

  it('needs the time zone extension, with a known IANA zone under its canonical name (422 naming it)', async () => {
    const { org, client } = await administrator()
    const cases: [Practitioner, RegExp][] = [
      [
        newPractitioner({ extension: undefined }),
        new RegExp(`needs the extension ${TIME_ZONE} with valueCode`),
      ],
      [
        newPractitioner({ extension: [{ url: TIME_ZONE, valueString: 'America/New_York' }] }),
        /with valueCode/,
      ],
      [
        newPractitioner({ extension: [{ url: TIME_ZONE, valueCode: 'US/Eastern' }] }),
        /US\/Eastern is stored under its canonical name: send America\/New_York/,
      ],
      [
        newPractitioner({ extension: [{ url: TIME_ZONE, valueCode: 'Mars/Olympus_Mons' }] }),
        /not a known IANA time zone/,
      ],
    ]
    for (const [sent, diagnostics] of cases) {
      const { status, outcome } = await refusal(
        client.create({ resourceType: 'Practitioner', body: asSent(sent) }),
      )
      expect(status, String(diagnostics)).toBe(422)
      expect(expressions(outcome)).toEqual(['Practitioner.extension'])
      expect(outcome.issue?.[0]?.diagnostics).toMatch(diagnostics)
      expect(fhirErrors(outcome)).toEqual([])
    }
    expect(await providerCount(org.id)).toBe(0)
  })

  it('refuses an NPI failing its check digit (422) and one already used in the organization (409), naming the identifier', async () => {
    const { org, client } = await administrator()
    const badDigit = await refusal(
      client.create({
        resourceType: 'Practitioner',
        body: asSent(newPractitioner({ identifier: [{ system: NPI_SYSTEM, value: '1234567890' }] })),
      }),
    )
    expect(badDigit.status).toBe(422)
    expect(expressions(badDigit.outcome)).toEqual(['Practitioner.identifier'])
    expect(badDigit.outcome.issue?.[0]?.diagnostics).toMatch(/check digit/)
    const noNpi = await refusal(
      client.create({
        resourceType: 'Practitioner',
        body: asSent(newPractitioner({ identifier: undefined })),
      }),
    )
    expect(noNpi.status).toBe(422)
    expect(expressions(noNpi.outcome)).toEqual(['Practitioner.identifier'])

    const sent = newPractitioner()
    await created(client, sent)
    const duplicate = await refusal(client.create({ resourceType: 'Practitioner', body: asSent(sent) }))
    expect(duplicate.status).toBe(409)
    expect(expressions(duplicate.outcome)).toEqual(['Practitioner.identifier'])
    expect(fhirErrors(duplicate.outcome)).toEqual([])
    expect(await providerCount(org.id)).toBe(1)
  })

  it('refuses every element the service cannot store (422, naming it), and stores nothing', async () => {
    const { org, client } = await administrator()
    const cases: [Practitioner, string[]][] = [
      [newPractitioner({ gender: 'female' }), ['Practitioner.gender']],
      [
        newPractitioner({
          name: [{ use: 'official', family: 'Curie', given: ['Marie', 'Salomea'], suffix: ['MD'] }],
        }),
        ['Practitioner.name[0].given[1]'],
      ],
      // The title is the name's suffix; without one, only the specialty is a qualification.
      [newPractitioner({ name: [{ family: 'Curie', given: ['Marie'] }] }), ['Practitioner.qualification[1]']],
      [
        newPractitioner({ name: [{ use: 'usual', family: 'Curie', given: ['Marie'], suffix: ['MD'] }] }),
        ['Practitioner.name[0].use'],
      ],
      [
        newPractitioner({ name: [{ family: 'Curie', given: ['Marie'], suffix: ['MD', 'PhD'] }] }),
        ['Practitioner.name[0].suffix[1]'],
      ],
      [
        newPractitioner({
          qualification: [
            { code: { text: 'MD' } },
            { code: { text: 'Radiology' } },
            { code: { text: 'Nuclear Medicine' } },
          ],
        }),
        ['Practitioner.qualification[2]'],
      ],
      [
        newPractitioner({
          qualification: [
            { code: { text: 'MD' } },
            {
              code: {
                coding: [{ system: 'http://nucc.org/provider-taxonomy', code: '2085R0202X' }],
                text: 'Radiology',
              },
            },
          ],
        }),
        ['Practitioner.qualification[1]'],
      ],
      [
        newPractitioner({
          telecom: [
            { system: 'email', value: 'mcurie@clinic.example' },
            { system: 'fax', value: '+1 555 010 3999' },
          ],
        }),
        ['Practitioner.telecom[1]'],
      ],
      [
        newPractitioner({ telecom: [{ system: 'phone', value: '+1 555 010 3000', use: 'mobile' }] }),
        ['Practitioner.telecom[0].use'],
      ],
      [
        newPractitioner({
          identifier: [
            { system: NPI_SYSTEM, value: uniqueNpi() },
            { system: 'urn:oid:2.16.840.1.113883.4.6.99', value: 'X1' },
          ],
        }),
        ['Practitioner.identifier[1]'],
      ],
      [
        newPractitioner({
          extension: [
            { url: TIME_ZONE, valueCode: 'America/New_York' },
            { url: 'http://example.org/fhir/StructureDefinition/parking-spot', valueString: 'B7' },
          ],
        }),
        ['Practitioner.extension[1]'],
      ],
    ]
    for (const [sent, expected] of cases) {
      const { status, outcome } = await refusal(
        client.create({ resourceType: 'Practitioner', body: asSent(sent) }),
      )
      expect(status, expected.join()).toBe(422)
      expect(expressions(outcome), expected.join()).toEqual(expected)
    }
    expect(await providerCount(org.id)).toBe(0)
  })

  it('with If-None-Exist on the NPI, answers the one match instead of adding another', async () => {
    const { org, client } = await administrator()
    const sent = newPractitioner()
    const first = await created(client, sent)
    const again = (await client.create({
      resourceType: 'Practitioner',
      body: asSent(sent),
      options: { headers: { 'if-none-exist': `identifier=${NPI_SYSTEM}|${sent.identifier?.[0]?.value}` } },
    })) as Practitioner
    expect([again.id, again.meta?.versionId]).toEqual([first.id, '1'])
    expect(await providerCount(org.id)).toBe(1)
  })

  it('is for the roles of POST /api/providers and a scope that may create', async () => {
    const org = await newOrganization(app)
    const allowed = ROUTE_ACCESS['POST /api/providers'].allow as readonly Role[]
    expect(allowed.length).toBeGreaterThan(0)
    for (const role of ROLES) {
      const user = await org.user(role)
      if (allowed.includes(role)) {
        expect((await created(clientFor(user.token))).id, role).toBeDefined()
      } else {
        expect((await refusal(created(clientFor(user.token)))).status, role).toBe(403)
      }
    }
    const before = await providerCount(org.id)
    expect(before).toBe(allowed.length)
    const admin = await org.user('ADMIN')
    const scoped = (scopes: string[], patient?: string) =>
      clientFor(tokenFor(app, admin, undefined, { scopes, patient }))
    expect((await refusal(created(scoped(['user/Practitioner.rs'])))).status).toBe(403)
    expect((await refusal(created(scoped(['user/Practitioner.u'])))).status).toBe(403)
    expect((await refusal(created(scoped(['patient/Practitioner.cu'], '1')))).status).toBe(403)
    expect(await providerCount(org.id)).toBe(before)
    for (const scopes of [['user/Practitioner.c'], ['user/Practitioner.write'], ['user/*.*']]) {
      expect((await created(scoped(scopes))).id, scopes.join()).toBeDefined()
    }
  })
})

describe('FHIR update and patch of a Practitioner', () => {
  it('replaces the provider with If-Match, refuses a stale one (412), and one written back unchanged makes no version', async () => {
    const { client } = await administrator()
    const practitioner = await created(client)
    const id = practitioner.id as string
    const changed = {
      ...practitioner,
      extension: [{ url: TIME_ZONE, valueCode: 'America/Chicago' }],
      name: [{ use: 'official' as const, family: 'Curie', given: ['Marie'], suffix: ['DO'] }],
      qualification: [{ code: { text: 'DO' } }, { code: { text: 'Oncology' } }],
    }
    const updated = (await client.update({
      resourceType: 'Practitioner',
      id,
      body: asSent(changed),
      options: { headers: { 'if-match': 'W/"1"' } },
    })) as Practitioner
    expect(updated.meta?.versionId).toBe('2')
    expect(headersOf(updated).get('etag')).toBe('W/"2"')
    const { meta: _meta, ...kept } = updated
    const { meta: _sentMeta, ...sent } = changed
    expect(kept).toEqual(sent)

    const stale = await refusal(
      client.update({
        resourceType: 'Practitioner',
        id,
        body: asSent(changed),
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(stale.status).toBe(412)

    const unchanged = (await client.update({
      resourceType: 'Practitioner',
      id,
      body: asSent(updated),
    })) as Practitioner
    expect(unchanged.meta?.versionId).toBe('2')
    const history = await client.history({ resourceType: 'Practitioner', id })
    expect((history as { total?: number }).total).toBe(2)
  })

  it('keeps what FHIR does not carry: weekly hours, slot length, the user account link, and active when left out', async () => {
    const { org, admin, client } = await administrator()
    const doctor = await org.user('PROVIDER')
    const response = await app.inject({
      method: 'POST',
      url: '/api/providers',
      headers: bearer(admin.token),
      payload: providerBody({
        slotMinutes: 20,
        weeklyHours: everyDay(['08:00', '12:00']),
        userId: doctor.id,
        active: false,
      }),
    })
    expect(response.statusCode, response.body).toBe(201)
    const before = response.json().data
    const read = (await client.read({ resourceType: 'Practitioner', id: String(before.id) })) as Practitioner
    expect(read.extension).toEqual([{ url: TIME_ZONE, valueCode: 'UTC' }])
    const { active: _active, ...withoutActive } = read
    const updated = (await client.update({
      resourceType: 'Practitioner',
      id: String(before.id),
      body: asSent({
        ...withoutActive,
        name: [{ use: 'official', family: 'Hopper', given: ['Grace'] }],
        qualification: [{ code: { text: 'Family Medicine' } }],
      }),
    })) as Practitioner
    expect(updated.meta?.versionId).toBe('2')
    expect(updated.active).toBe(false)
    const after = await restProvider(admin, before.id)
    expect(after).toMatchObject({
      title: null,
      specialty: 'Family Medicine',
      slotMinutes: 20,
      userId: doctor.id,
      active: false,
      version: 2,
    })
    expect(after.weeklyHours).toEqual(before.weeklyHours)
    expect(after.weeklyHours).toHaveLength(7)
  })

  it('refuses another organization’s practitioner (403), a body whose id is not the URL’s (400), and DELETE (405)', async () => {
    const { admin, client } = await administrator()
    const practitioner = await created(client)
    const id = practitioner.id as string
    const other = await administrator()
    expect(
      (await refusal(other.client.update({ resourceType: 'Practitioner', id, body: asSent(practitioner) })))
        .status,
    ).toBe(403)
    expect(
      (
        await refusal(
          other.client.patch({
            resourceType: 'Practitioner',
            id,
            jsonPatch: [{ op: 'replace', path: '/active', value: false }],
          }),
        )
      ).status,
    ).toBe(403)
    expect(
      (
        await refusal(
          client.update({
            resourceType: 'Practitioner',
            id,
            body: asSent({ ...practitioner, id: '999999' }),
          }),
        )
      ).status,
    ).toBe(400)
    const deleted = await refusal(client.delete({ resourceType: 'Practitioner', id }))
    expect(deleted.status).toBe(405)
    const conditional = await fetch(
      `${baseUrl}/Practitioner?identifier=${encodeURIComponent(`${NPI_SYSTEM}|${practitioner.identifier?.[0]?.value}`)}`,
      { method: 'DELETE', headers: bearer(admin.token) },
    )
    expect(conditional.status).toBe(405)
    expect((await client.read({ resourceType: 'Practitioner', id })).id).toBe(id)

    const statement = (await new Client({ baseUrl }).capabilityStatement()) as unknown as CapabilityStatement
    const declared = statement.rest?.[0]?.resource?.find((resource) => resource.type === 'Practitioner')
    expect(declared?.interaction?.map((interaction) => interaction.code)).toEqual(
      expect.arrayContaining(['create', 'update', 'patch']),
    )
    expect(declared?.interaction?.map((interaction) => interaction.code)).not.toContain('delete')
    expect(declared?.conditionalDelete).toBe('not-supported')
  })

  it('patches with JSON Patch, checked like an update', async () => {
    const { admin, client } = await administrator()
    const practitioner = await created(client)
    const id = practitioner.id as string
    const patched = (await client.patch({
      resourceType: 'Practitioner',
      id,
      jsonPatch: [
        { op: 'test', path: '/name/0/family', value: 'Curie' },
        { op: 'replace', path: '/active', value: false },
        { op: 'replace', path: '/qualification/1/code/text', value: 'Nuclear Medicine' },
        { op: 'remove', path: '/telecom/1' },
      ],
    })) as Practitioner
    expect(patched.meta?.versionId).toBe('2')
    expect(fhirErrors(patched)).toEqual([])
    expect(await restProvider(admin, id)).toMatchObject({
      active: false,
      specialty: 'Nuclear Medicine',
      phoneNumber: null,
      email: 'mcurie@clinic.example',
    })
    const unstorable = await refusal(
      client.patch({
        resourceType: 'Practitioner',
        id,
        jsonPatch: [{ op: 'add', path: '/birthDate', value: '1867-11-07' }],
      }),
    )
    expect(unstorable.status).toBe(422)
    expect(expressions(unstorable.outcome)).toEqual(['Practitioner.birthDate'])
    const badNpi = await refusal(
      client.patch({
        resourceType: 'Practitioner',
        id,
        jsonPatch: [{ op: 'replace', path: '/identifier/0/value', value: '1234567890' }],
      }),
    )
    expect(badNpi.status).toBe(422)
    expect(expressions(badNpi.outcome)).toEqual(['Practitioner.identifier'])
    const stale = await refusal(
      client.patch({
        resourceType: 'Practitioner',
        id,
        jsonPatch: [{ op: 'replace', path: '/active', value: true }],
        options: { headers: { 'if-match': 'W/"1"' } },
      }),
    )
    expect(stale.status).toBe(412)
  })

  it('updates conditionally on the NPI: adds the provider when none has it, replaces the one that has', async () => {
    const { org, client } = await administrator()
    const sent = newPractitioner()
    const searchParams = { identifier: `${NPI_SYSTEM}|${sent.identifier?.[0]?.value}` }
    const first = (await client.update({
      resourceType: 'Practitioner',
      searchParams,
      body: asSent(sent),
    })) as Practitioner
    expect(first.meta?.versionId).toBe('1')
    const second = (await client.update({
      resourceType: 'Practitioner',
      searchParams,
      body: asSent({ ...sent, active: false }),
    })) as Practitioner
    expect([second.id, second.meta?.versionId, second.active]).toEqual([first.id, '2', false])
    expect(await providerCount(org.id)).toBe(1)
  })
})

describe('the audit trail of FHIR practitioner writes', () => {
  it('is what the REST routes of the same changes leave', async () => {
    const auditOf = (organizationId: number) =>
      app.db
        .selectFrom('audit_log')
        .select(['action', 'resource_type', 'status_code', 'outcome'])
        .where('organization_id', '=', organizationId)
        .orderBy('id')
        .execute()

    const viaRest = await administrator()
    const body = providerBody({ weeklyHours: undefined, slotMinutes: undefined })
    const posted = await app.inject({
      method: 'POST',
      url: '/api/providers',
      headers: bearer(viaRest.admin.token),
      payload: body,
    })
    expect(posted.statusCode, posted.body).toBe(201)
    const put = await app.inject({
      method: 'PUT',
      url: `/api/providers/${posted.json().data.id}`,
      headers: bearer(viaRest.admin.token),
      payload: { ...body, specialty: 'Oncology' },
    })
    expect(put.statusCode, put.body).toBe(200)

    const viaFhir = await administrator()
    const practitioner = await created(viaFhir.client)
    await viaFhir.client.update({
      resourceType: 'Practitioner',
      id: practitioner.id as string,
      body: asSent({
        ...practitioner,
        qualification: [{ code: { text: 'MD' } }, { code: { text: 'Oncology' } }],
      }),
    })
    await app.auditLog.flush()
    // The same records, or none where the REST routes leave none.
    expect(await auditOf(viaFhir.org.id)).toEqual(await auditOf(viaRest.org.id))
  })
})

describe('FHIR writes of generated practitioners', () => {
  const name = fc.oneof(word, freeText(100))
  // Numbers as the service takes them: a digit first, after an optional +.
  const phone = fc.oneof(
    fc.stringMatching(/^\+1 [2-9][0-9]{2} [0-9]{3} [0-9]{4}$/),
    fc.stringMatching(/^\+1 \([0-9]{3}\) [0-9]{3}-[0-9]{4}$/),
    fc.stringMatching(/^[0-9]{3}\.[0-9]{3}\.[0-9]{4}$/),
    fc.stringMatching(/^\+[1-9][0-9]{7,13}$/),
  )
  const practitioner = fc.record({
    family: name,
    given: name,
    official: fc.boolean(),
    title: optional(fc.oneof(fc.constantFrom('MD', 'DO', 'NP', 'PA-C', 'MBBS, PhD'), freeText(50))),
    // Whether the title is also sent as a qualification, as a read shows it.
    titleQualified: fc.boolean(),
    specialty: optional(fc.oneof(fc.constantFrom('Family Medicine', 'Radiology'), freeText(100))),
    specialtyFirst: fc.boolean(),
    npi: fc.stringMatching(/^[12][0-9]{8}$/).map(npiOf),
    email: optional(fc.emailAddress().filter((address) => address.length <= 254)),
    phone: optional(phone),
    phoneFirst: fc.boolean(),
    work: fc.boolean(),
    active: optional(fc.boolean()),
    // The zones the runtime knows, by the names it gives them (the service stores no alias).
    timeZone: fc.constantFrom('UTC', ...Intl.supportedValuesOf('timeZone')),
  })

  it('stores every element of each valid practitioner it is sent, reads back a valid resource, and takes it back unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(practitioner, async (generated) => {
        const use = generated.work ? { use: 'work' as const } : {}
        const telecom: ContactPoint[] = [
          ...(generated.email ? [{ system: 'email' as const, value: generated.email, ...use }] : []),
          ...(generated.phone ? [{ system: 'phone' as const, value: generated.phone, ...use }] : []),
        ]
        if (generated.phoneFirst) telecom.reverse()
        const qualification = [
          ...(generated.title && generated.titleQualified ? [{ code: { text: generated.title } }] : []),
          ...(generated.specialty ? [{ code: { text: generated.specialty } }] : []),
        ]
        if (generated.specialtyFirst) qualification.reverse()
        const sent: Practitioner = {
          resourceType: 'Practitioner',
          extension: [{ url: TIME_ZONE, valueCode: generated.timeZone }],
          identifier: [{ system: NPI_SYSTEM, value: generated.npi }],
          ...(generated.active === undefined ? {} : { active: generated.active }),
          name: [
            {
              ...(generated.official ? { use: 'official' as const } : {}),
              family: generated.family,
              given: [generated.given],
              ...(generated.title ? { suffix: [generated.title] } : {}),
            },
          ],
          ...(telecom.length > 0 ? { telecom } : {}),
          ...(qualification.length > 0 ? { qualification } : {}),
        }
        // An organization of its own for each: an NPI is its organization's one provider's.
        const { client } = await administrator()
        await expectStoredAsSent(client, sent)
      }),
      { numRuns: 20 },
    )
  })
})
