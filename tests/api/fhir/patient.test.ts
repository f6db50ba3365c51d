import type { Bundle, OperationOutcome, Patient } from '@medplum/fhirtypes'
import { Client } from 'fhir-kit-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import {
  bearer,
  createPatient,
  daysFromToday,
  newOrganization,
  patientBody,
  type TestUser,
} from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'
import { listeningFhirApp } from '../../helpers/fhir-client.js'
import { fhirErrors } from '../../helpers/fhir-validator.js'
import { booked, newPractice } from '../../helpers/scheduling.js'

let app: App
let baseUrl: string

beforeAll(async () => {
  ;({ app, baseUrl } = await listeningFhirApp({ FHIR_MRN_SYSTEM: 'https://clinic.example/mrn' }))
})
afterAll(async () => {
  await app.close()
})

const get = (user: TestUser | string, path: string, headers: Record<string, string> = {}) =>
  fhirGet(app, user, path, headers)

async function practice() {
  const org = await newOrganization(app)
  const nurse = await org.user('NURSE')
  const admin = await org.user('ADMIN')
  return { org, nurse, admin }
}

describe('GET /fhir/R4/metadata', () => {
  it('returns a valid CapabilityStatement naming Patient with its search parameters, without a token', async () => {
    const response = await app.inject({ url: '/fhir/R4/metadata' })
    expect(response.statusCode).toBe(200)
    const statement = expectFhir(response) as unknown as {
      fhirVersion: string
      rest: { resource: { type: string; searchParam: { name: string }[] }[] }[]
    }
    expect(statement.fhirVersion).toBe('4.0.1')
    const patient = statement.rest[0]?.resource.find((resource) => resource.type === 'Patient')
    expect(patient?.searchParam.map((parameter) => parameter.name)).toEqual(
      expect.arrayContaining([
        'identifier',
        'name',
        'family',
        'given',
        'birthdate',
        'gender',
        '_lastUpdated',
        '_id',
      ]),
    )
  })

  it('publishes the SMART configuration with the token endpoint and scopes', async () => {
    const response = await app.inject({ url: '/fhir/R4/.well-known/smart-configuration' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({
      token_endpoint: expect.stringMatching(/\/protocol\/openid-connect\/token$/),
      scopes_supported: expect.arrayContaining(['patient/Patient.read', 'system/*.rs']),
      capabilities: expect.arrayContaining(['permission-v2']),
    })
  })
})

describe('GET /fhir/R4/Patient/{id}', () => {
  const full = {
    identification: {
      firstName: 'Zoë',
      middleName: 'Ana',
      lastName: 'Łukasiewicz',
      dateOfBirth: '1979-03-04',
      gender: 'Female',
    },
    contact: {
      email: 'zoe@example.com',
      phoneNumber: '+48 22 000 0000',
      address: { street: 'ul. Długa 1', city: 'Kraków', postalCode: '30-001', country: 'PL' },
    },
    emergencyContact: { name: 'Jan', relationship: 'Brother', phoneNumber: '+48 22 000 0001' },
    preferredLanguage: 'pl',
    mrn: 'MRN-FHIR-1',
  }

  it('returns the patient as a valid FHIR Patient with MRN, names, telecom, address and version', async () => {
    const { nurse } = await practice()
    const id = await createPatient(app, nurse, full)
    const response = await get(nurse, `/Patient/${id}`)
    expect(response.statusCode).toBe(200)
    const patient = expectFhir(response) as Patient
    expect(patient).toMatchObject({
      resourceType: 'Patient',
      id: String(id),
      meta: { versionId: '1' },
      identifier: [{ system: 'https://clinic.example/mrn', value: 'MRN-FHIR-1' }],
      name: [{ family: 'Łukasiewicz', given: ['Zoë', 'Ana'] }],
      gender: 'female',
      birthDate: '1979-03-04',
      telecom: [
        { system: 'email', value: 'zoe@example.com' },
        { system: 'phone', value: '+48 22 000 0000' },
      ],
      address: [{ line: ['ul. Długa 1'], city: 'Kraków', postalCode: '30-001', country: 'PL' }],
      communication: [{ language: { coding: [{ code: 'pl' }] } }],
    })
    expect(response.headers.etag).toBe('W/"1"')
  })

  it('leaves out what the patient does not have, and stays valid', async () => {
    const { nurse } = await practice()
    const id = await createPatient(
      app,
      nurse,
      patientBody({
        contact: undefined,
        identification: { firstName: 'A', lastName: 'B', dateOfBirth: '2000-01-01', gender: 'Unknown' },
      }),
    )
    const patient = expectFhir(await get(nurse, `/Patient/${id}`)) as Patient
    expect(patient.telecom).toBeUndefined()
    expect(patient.address).toBeUndefined()
    expect(patient.contact).toBeUndefined()
    expect(patient.gender).toBe('unknown')
  })

  it('answers 304 for a current If-None-Match, and reads the current version by _history', async () => {
    const { nurse } = await practice()
    const id = await createPatient(app, nurse)
    expect((await get(nurse, `/Patient/${id}`, { 'if-none-match': 'W/"1"' })).statusCode).toBe(304)
    const current = await get(nurse, `/Patient/${id}/_history/1`)
    expect(current.statusCode).toBe(200)
    const older = await get(nurse, `/Patient/${id}/_history/7`)
    expect(older.statusCode).toBe(404)
    expect((expectFhir(older) as OperationOutcome).issue?.[0]?.code).toBe('not-found')
  })

  it('returns the whole patient with a Warning for _summary or _elements, and 400 for them with Prefer: handling=strict', async () => {
    const { nurse } = await practice()
    const id = await createPatient(app, nurse)
    const plain = await get(nurse, `/Patient/${id}`)
    for (const query of ['_summary=true', '_summary=text', '_summary=data', '_elements=name,birthDate']) {
      const lenient = await get(nurse, `/Patient/${id}?${query}`)
      expect(lenient.statusCode, query).toBe(200)
      expect(lenient.json(), query).toEqual(plain.json())
      expect(lenient.headers.warning, query).toBe(
        `299 - "Not supported, the whole resource is returned: ${query.split('=')[0]}"`,
      )
      const strict = await get(nurse, `/Patient/${id}?${query}`, { prefer: 'handling=strict' })
      expect(strict.statusCode, query).toBe(400)
      expect((expectFhir(strict) as OperationOutcome).issue?.[0]?.diagnostics, query).toContain(
        query.split('=')[0],
      )
    }
    const unsummarised = await get(nurse, `/Patient/${id}?_summary=false`, { prefer: 'handling=strict' })
    expect(unsummarised.statusCode).toBe(200)
    expect(unsummarised.headers.warning).toBeUndefined()
    expect((await get(nurse, `/Patient/${id}?_summary=all`)).statusCode).toBe(400)
  })

  it('answers OperationOutcomes: 404 unknown, 410 deleted, 403 another organization, 401 no token', async () => {
    const { nurse, admin } = await practice()
    const other = await practice()
    const id = await createPatient(app, nurse)
    const foreign = await createPatient(app, other.nurse)
    await app.inject({ method: 'DELETE', url: `/api/patients/${id}`, headers: bearer(admin.token) })
    const cases: [string, string, number, string][] = [
      [nurse.token, '/Patient/2000000000', 404, 'not-found'],
      [nurse.token, '/Patient/abc', 404, 'not-found'],
      [nurse.token, `/Patient/${id}`, 410, 'deleted'],
      [nurse.token, `/Patient/${foreign}`, 403, 'forbidden'],
      ['not-a-token', `/Patient/${foreign}`, 401, 'login'],
      [nurse.token, '/Nothing/1', 404, 'not-found'],
    ]
    for (const [token, path, status, code] of cases) {
      const response = await get(token, path)
      expect(response.statusCode, path).toBe(status)
      expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code, path).toBe(code)
    }
  })

  it('serves JSON for _format=json and JSON-accepting clients, and 406 for any other format', async () => {
    const { nurse } = await practice()
    const id = await createPatient(app, nurse)
    const served: [string, Record<string, string>][] = [
      ['?_format=json', {}],
      ['?_format=application/fhir%2Bjson', {}],
      ['', { accept: 'application/fhir+json' }],
      ['', { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }],
    ]
    for (const [query, headers] of served) {
      const response = await get(nurse, `/Patient/${id}${query}`, headers)
      expect(response.statusCode, `${query} ${JSON.stringify(headers)}`).toBe(200)
      expect((expectFhir(response) as Patient).id).toBe(String(id))
    }
    const refused: [string, Record<string, string>][] = [
      ['?_format=xml', {}],
      ['?_format=application/fhir%2Bxml', {}],
      ['', { accept: 'application/fhir+xml' }],
    ]
    for (const [query, headers] of refused) {
      const response = await get(nurse, `/Patient/${id}${query}`, headers)
      expect(response.statusCode, `${query} ${JSON.stringify(headers)}`).toBe(406)
      expect((expectFhir(response) as OperationOutcome).issue?.[0]?.code).toBe('not-supported')
    }
  })

  it('records the read in the audit trail like a REST read', async () => {
    const { org, nurse } = await practice()
    const id = await createPatient(app, nurse)
    await get(nurse, `/Patient/${id}`)
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'resource_ids'])
      .where('organization_id', '=', org.id)
      .where('action', '=', 'READ')
      .execute()
    expect(rows).toContainEqual({ action: 'READ', resource_ids: [id] })
  })
})

describe('GET /fhir/R4/Patient (search)', () => {
  async function people() {
    const { org, nurse, admin } = await practice()
    const body = (firstName: string, lastName: string, dateOfBirth: string, gender: string, mrn: string) =>
      patientBody({ identification: { firstName, lastName, dateOfBirth, gender }, mrn })
    const ids = {
      ada: await createPatient(app, nurse, body('Ada', 'Lovelace', '1915-12-10', 'Female', 'S-ADA')),
      alan: await createPatient(app, nurse, body('Alan', 'Turing', '1912-06-23', 'Male', 'S-ALAN')),
      grace: await createPatient(app, nurse, body('Grace', 'Hopper', '1906-12-09', 'Female', 'S-GRACE')),
    }
    return { org, nurse, admin, ids }
  }

  it('finds by name, family, given, gender, birthdate with prefixes, identifier and _id', async () => {
    const { nurse, ids } = await people()
    const cases: [string, number[]][] = [
      ['name=lov', [ids.ada]],
      ['family=turing', [ids.alan]],
      ['given=gra', [ids.grace]],
      ['gender=female', [ids.ada, ids.grace]],
      ['birthdate=ge1910-01-01', [ids.ada, ids.alan]],
      ['birthdate=lt1910', [ids.grace]],
      ['birthdate=1912-06', [ids.alan]],
      ['birthdate=ne1912-06-23&gender=female', [ids.ada, ids.grace]],
      ['identifier=https://clinic.example/mrn|S-ALAN', [ids.alan]],
      ['identifier=S-GRACE', [ids.grace]],
      ['identifier=https://other.example/mrn|S-ALAN', []],
      [`_id=${ids.ada},${ids.alan}`, [ids.ada, ids.alan]],
      ['name=lov,hop', [ids.ada, ids.grace]],
      ['_lastUpdated=ge2000-01-01&family=hopper', [ids.grace]],
      // Codes that name what every object inherits name nothing here.
      ['gender=constructor', []],
      ['gender=toString,female', [ids.ada, ids.grace]],
    ]
    for (const [query, expected] of cases) {
      const response = await get(nurse, `/Patient?${query}`)
      expect(response.statusCode, query).toBe(200)
      const bundle = expectFhir(response) as Bundle
      expect(bundle.type).toBe('searchset')
      expect(matchIds(bundle), query).toEqual(expected)
      expect(bundle.total, query).toBe(expected.length)
    }
  })

  it('pages with next links to the end, and counts with _summary=count', async () => {
    const { nurse, ids } = await people()
    const seen: number[] = []
    let url: string | undefined = '/fhir/R4/Patient?_count=2'
    for (let page = 0; url && page < 10; page++) {
      const response = await app.inject({ url, headers: bearer(nurse.token) })
      const bundle = expectFhir(response) as Bundle
      seen.push(...matchIds(bundle))
      // A page that is not all the matches has no total (that would need a count).
      expect(bundle.total).toBeUndefined()
      const next = bundle.link?.find((link) => link.relation === 'next')?.url
      url = next ? next.slice(next.indexOf('/fhir/R4')) : undefined
    }
    expect(seen).toEqual([ids.ada, ids.alan, ids.grace])
    const counted = expectFhir(await get(nurse, '/Patient?_summary=count&gender=female')) as Bundle
    expect(counted.total).toBe(2)
    expect(counted.entry).toBeUndefined()
  })

  it('ignores an unknown parameter and says so, or refuses it with Prefer: handling=strict', async () => {
    const { nurse, ids } = await people()
    const lenient = expectFhir(await get(nurse, '/Patient?family=turing&shoeSize=42')) as Bundle
    expect(matchIds(lenient)).toEqual([ids.alan])
    const outcome = lenient.entry?.find((entry) => entry.search?.mode === 'outcome')
      ?.resource as OperationOutcome
    expect(outcome.issue?.[0]?.diagnostics).toContain('shoeSize')
    expect(lenient.link?.[0]?.url).not.toContain('shoeSize')
    const strict = await get(nurse, '/Patient?family=turing&shoeSize=42', { prefer: 'handling=strict' })
    expect(strict.statusCode).toBe(400)
    expectFhir(strict)
    const bad = await get(nurse, '/Patient?birthdate=yesterday')
    expect(bad.statusCode).toBe(400)
  })

  it('reports _summary and _elements it does not implement in the outcome, or refuses them with Prefer: handling=strict', async () => {
    const { nurse, ids } = await people()
    for (const query of ['_summary=true', '_summary=text', '_summary=data', '_elements=name']) {
      const lenient = expectFhir(await get(nurse, `/Patient?family=turing&${query}`)) as Bundle
      expect(matchIds(lenient), query).toEqual([ids.alan])
      const outcome = lenient.entry?.find((entry) => entry.search?.mode === 'outcome')
        ?.resource as OperationOutcome
      expect(outcome?.issue?.[0]?.diagnostics, query).toContain(query)
      expect(lenient.link?.[0]?.url, query).not.toContain(query.split('=')[0])
      const strict = await get(nurse, `/Patient?family=turing&${query}`, { prefer: 'handling=strict' })
      expect(strict.statusCode, query).toBe(400)
      expect((expectFhir(strict) as OperationOutcome).issue?.[0]?.diagnostics, query).toContain(query)
    }
    const unsummarised = await get(nurse, '/Patient?family=turing&_summary=false', {
      prefer: 'handling=strict',
    })
    expect(unsummarised.statusCode).toBe(200)
    expect(matchIds(unsummarised.json() as Bundle)).toEqual([ids.alan])
    expect((await get(nurse, '/Patient?family=turing&_summary=all')).statusCode).toBe(400)
  })

  it('searches by POST _search with a form body', async () => {
    const { nurse, ids } = await people()
    const response = await app.inject({
      method: 'POST',
      url: '/fhir/R4/Patient/_search',
      headers: { ...bearer(nurse.token), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'family=hopper',
    })
    expect(response.statusCode).toBe(200)
    expect(matchIds(expectFhir(response) as Bundle)).toEqual([ids.grace])
  })

  it('never returns another organization’s patients', async () => {
    const mine = await people()
    await people()
    const bundle = expectFhir(await get(mine.nurse, '/Patient?_count=100')) as Bundle
    expect(matchIds(bundle).sort()).toEqual(Object.values(mine.ids).sort())
  })

  it('refuses a role the REST list refuses (FRONT_DESK may read a patient, not search)', async () => {
    const { org, ids } = await people()
    const desk = await org.user('FRONT_DESK')
    expect((await get(desk, `/Patient/${ids.ada}`)).statusCode).toBe(200)
    const search = await get(desk, '/Patient')
    expect(search.statusCode).toBe(403)
    expectFhir(search)
  })
})

describe('SMART scopes', () => {
  it('keeps a patient/ token to its launch patient', async () => {
    const { org, nurse } = await practice()
    const mine = await createPatient(app, nurse)
    const other = await createPatient(app, nurse)
    for (const scope of ['patient/Patient.read', 'patient/*.rs', 'patient/Patient.r patient/Patient.s']) {
      const token = smartToken(app, org, nurse, scope.split(' '), mine)
      expect((await get(token, `/Patient/${mine}`)).statusCode, scope).toBe(200)
      expect((await get(token, `/Patient/${other}`)).statusCode, scope).toBe(403)
      const bundle = expectFhir(await get(token, '/Patient')) as Bundle
      expect(bundle.entry?.map((entry) => entry.resource?.id)).toEqual([String(mine)])
    }
  })

  it('refuses what the scopes do not grant, and needs a launch patient for patient/ scopes', async () => {
    const { org, nurse } = await practice()
    const id = await createPatient(app, nurse)
    const observationsOnly = smartToken(app, org, nurse, ['user/Observation.read'])
    expect((await get(observationsOnly, `/Patient/${id}`)).statusCode).toBe(403)
    const readNotSearch = smartToken(app, org, nurse, ['user/Patient.r'])
    expect((await get(readNotSearch, `/Patient/${id}`)).statusCode).toBe(200)
    expect((await get(readNotSearch, '/Patient')).statusCode).toBe(403)
    const noLaunch = smartToken(app, org, nurse, ['patient/Patient.read'])
    expect((await get(noLaunch, `/Patient/${id}`)).statusCode).toBe(403)
    const system = smartToken(app, org, nurse, ['system/*.read'])
    expect((await get(system, `/Patient/${id}`)).statusCode).toBe(200)
  })

  it('does not widen roles: a scope cannot give BILLING what its role lacks', async () => {
    const { org, nurse } = await practice()
    const billing = await org.user('BILLING')
    const id = await createPatient(app, nurse)
    const token = smartToken(app, org, billing, ['system/*.read'])
    expect((await get(token, '/Patient')).statusCode).toBe(403)
    expect((await get(billing, `/Patient/${id}`)).statusCode).toBe(200)
  })
})

describe('a real FHIR client (fhir-kit-client)', () => {
  it('fetches the capabilities, reads, searches to the last page and gets an OperationOutcome', async () => {
    const { nurse } = await practice()
    const ids = [
      await createPatient(app, nurse),
      await createPatient(app, nurse),
      await createPatient(app, nurse),
    ]
    const client = new Client({ baseUrl, bearerToken: nurse.token })
    const capabilities = (await client.capabilityStatement()) as { resourceType: string }
    expect(capabilities.resourceType).toBe('CapabilityStatement')
    const patient = (await client.read({ resourceType: 'Patient', id: String(ids[0]) })) as Patient
    expect(patient.id).toBe(String(ids[0]))
    const found: string[] = []
    let bundle = (await client.search({
      resourceType: 'Patient',
      searchParams: { _count: 2 },
    })) as unknown as Bundle
    for (let page = 0; page < 10; page++) {
      found.push(...(bundle.entry ?? []).map((entry) => entry.resource?.id as string))
      const next = client.nextPage({ bundle: bundle as never })
      if (!next) break
      bundle = (await next) as unknown as Bundle
    }
    expect(found).toEqual(ids.map(String))

    const etag = Client.httpFor(patient as never).response?.headers.get('etag')
    expect(etag).toBe('W/"1"')
    const unchanged = await client
      .read({
        resourceType: 'Patient',
        id: String(ids[0]),
        options: { headers: { 'If-None-Match': String(etag) } },
      })
      .catch((error: unknown) => error)
    expect((unchanged as { response: { status: number } }).response.status).toBe(304)
    const changed = (await client.read({
      resourceType: 'Patient',
      id: String(ids[0]),
      options: { headers: { 'If-None-Match': 'W/"0"' } },
    })) as Patient
    expect(changed.meta?.versionId).toBe('1')

    const failure = await client
      .read({ resourceType: 'Patient', id: '2000000000' })
      .catch((error: unknown) => error)
    expect((failure as { response: { status: number; data: OperationOutcome } }).response.status).toBe(404)
    expect((failure as { response: { data: OperationOutcome } }).response.data.resourceType).toBe(
      'OperationOutcome',
    )
  })

  it('searches with _include and gets unicode names back intact and valid', async () => {
    const practice = await newPractice(app)
    const named = await createPatient(
      app,
      practice.nurse,
      patientBody({
        identification: {
          firstName: 'Zoë Ångström',
          lastName: 'Łukasiewicz-Nguyễn 李',
          dateOfBirth: '1990-02-28',
          gender: 'Other',
        },
      }),
    )
    await booked(app, { ...practice, patient: { id: named } }, daysFromToday(2), '09:00:00')
    const client = new Client({ baseUrl, bearerToken: practice.nurse.token })
    const bundle = (await client.search({
      resourceType: 'Appointment',
      searchParams: { patient: `Patient/${named}`, _include: 'Appointment:patient' },
    })) as unknown as Bundle
    expect(fhirErrors(bundle)).toEqual([])
    const included = bundle.entry?.find((entry) => entry.search?.mode === 'include')?.resource as Patient
    expect(included.id).toBe(String(named))
    expect(included.name?.[0]).toMatchObject({ family: 'Łukasiewicz-Nguyễn 李', given: ['Zoë Ångström'] })
    const found = (await client.search({
      resourceType: 'Patient',
      searchParams: { family: 'łukasiewicz', given: 'ZOË' },
    })) as unknown as Bundle
    expect(matchIds(found)).toEqual([named])
  })
})
