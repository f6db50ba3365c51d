import { randomUUID } from 'node:crypto'
import type {
  Bundle,
  MedicationRequest,
  MedicationStatement,
  OperationOutcome,
  Resource,
} from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, createPatient, newOrganization, type TestUser } from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds, smartToken } from '../../helpers/fhir.js'
import { type Clinic, newClinic } from '../../helpers/scheduling.js'
import { usCoreErrors } from '../../helpers/us-core.js'
import { signedInPatient } from '../patient-users/helpers.js'

// The medication list as US Core 6.1.0 MedicationRequest (US Core profiles no MedicationStatement):
// each entry a plan, its prescriber the requester or, without one, a reported entry; the same
// records stay served as MedicationStatement.

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const PROFILE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-medicationrequest|6.1.0'
const RXNORM = 'http://www.nlm.nih.gov/research/umls/rxnorm'
const FHIR_JSON = 'application/fhir+json'

async function post(user: TestUser, url: string, body: object): Promise<number> {
  const response = await app.inject({ method: 'POST', url, headers: bearer(user.token), payload: body })
  expect(response.statusCode, `${url}: ${response.body}`).toBe(201)
  return response.json().data.id
}

async function read<R extends Resource>(user: TestUser | string, path: string): Promise<R> {
  const response = await fhirGet(app, user, path)
  expect(response.statusCode, response.body).toBe(200)
  return expectFhir(response) as R
}

async function search(user: TestUser | string, path: string): Promise<number[]> {
  const response = await fhirGet(app, user, path)
  expect(response.statusCode, `${path}: ${response.body}`).toBe(200)
  return matchIds(expectFhir(response) as Bundle)
}

const write = (user: TestUser, method: 'POST' | 'PUT', path: string, resource: object) =>
  app.inject({
    method,
    url: `/fhir/R4${path}`,
    headers: { ...bearer(user.token), 'content-type': FHIR_JSON },
    payload: resource,
  })

/** A clinic (its doctor, a provider record, a patient) with one encounter of the patient. */
async function clinicWithEncounter(): Promise<Clinic & { encounter: number }> {
  const clinic = await newClinic(app)
  const encounter = await post(clinic.doctor, '/api/encounters', {
    patientId: clinic.patient.id,
    providerId: clinic.provider.id,
    encounterDate: '2024-03-15',
    encounterType: 'OFFICE_VISIT',
  })
  return { ...clinic, encounter }
}

const medicationsOf = (patient: number) => `/api/patients/${patient}/medications`

/** A full entry: prescribed by the clinic's provider in its encounter, coded, with its whole dosage. */
const fullEntry = (clinic: Clinic & { encounter: number }) =>
  post(clinic.doctor, medicationsOf(clinic.patient.id), {
    encounterId: clinic.encounter,
    name: 'Metformin 500 mg tablet',
    rxnormCode: '861007',
    dose: 500,
    doseUnit: 'mg',
    route: 'ORAL',
    frequency: 'twice daily',
    startDate: '2024-03-15',
    endDate: '2024-09-15',
    prescriberId: clinic.provider.id,
    status: 'COMPLETED',
    instructions: 'Take with meals',
  })

describe('MedicationRequest (us-core-medicationrequest)', () => {
  it('claims the profile and meets it with full, minimal, self-reported and entered-in-error entries; writes back as a no-op', async () => {
    const clinic = await clinicWithEncounter()
    const medications = medicationsOf(clinic.patient.id)
    const full = await fullEntry(clinic)
    const minimal = await post(clinic.doctor, medications, { name: 'Vitamin D3' })
    const reported = await post(clinic.doctor, medications, {
      name: 'Ibuprofen 200 mg tablet',
      rxnormCode: '310965',
      frequency: 'as needed',
      startDate: '2023-01-01',
    })
    const withdrawn = await post(clinic.doctor, medications, {
      name: 'Lisinopril 10 mg tablet',
      prescriberId: clinic.provider.id,
    })
    const withdrawal = await app.inject({
      method: 'POST',
      url: `${medications}/${withdrawn}/entered-in-error`,
      headers: bearer(clinic.doctor.token),
      payload: { reason: 'Recorded for the wrong patient' },
    })
    expect(withdrawal.statusCode, withdrawal.body).toBe(200)

    for (const id of [full, minimal, reported, withdrawn]) {
      const request = await read<MedicationRequest>(clinic.doctor, `/MedicationRequest/${id}`)
      expect(request.meta?.profile).toEqual([PROFILE])
      expect(request.intent).toBe('plan')
      expect(usCoreErrors(request, PROFILE), String(id)).toEqual([])
      if (id !== withdrawn) {
        const back = await write(clinic.doctor, 'PUT', `/MedicationRequest/${id}`, request)
        expect(back.statusCode, back.body).toBe(200)
        expect((back.json() as Resource).meta?.versionId).toBe(request.meta?.versionId)
      }
    }
    expect((await read<MedicationRequest>(clinic.doctor, `/MedicationRequest/${withdrawn}`)).status).toBe(
      'entered-in-error',
    )
  })

  it('shows the prescriber as requester, an entry without one as reported, and the dates taken as the dosage’s bounds', async () => {
    const clinic = await clinicWithEncounter()
    const full = await fullEntry(clinic)
    const reported = await post(clinic.doctor, medicationsOf(clinic.patient.id), { name: 'Vitamin D3' })

    const request = await read<MedicationRequest>(clinic.doctor, `/MedicationRequest/${full}`)
    const rest = await app.inject({
      url: `${medicationsOf(clinic.patient.id)}/${full}`,
      headers: bearer(clinic.doctor.token),
    })
    expect(request).toMatchObject({
      status: 'completed',
      intent: 'plan',
      reportedBoolean: false,
      medicationCodeableConcept: {
        coding: [{ system: RXNORM, code: '861007' }],
        text: 'Metformin 500 mg tablet',
      },
      subject: { reference: `Patient/${clinic.patient.id}` },
      encounter: { reference: `Encounter/${clinic.encounter}` },
      authoredOn: rest.json().data.recordedAt,
      requester: { reference: `Practitioner/${clinic.provider.id}` },
      dosageInstruction: [
        {
          text: '500 mg oral twice daily; Take with meals',
          additionalInstruction: [{ text: 'Take with meals' }],
          timing: {
            code: { text: 'twice daily' },
            repeat: { boundsPeriod: { start: '2024-03-15', end: '2024-09-15' } },
          },
          route: { coding: [{ system: 'http://snomed.info/sct', code: '26643006' }] },
          doseAndRate: [{ doseQuantity: { value: 500, unit: 'mg' } }],
        },
      ],
    })
    expect(request.category).toBeUndefined()

    const self = await read<MedicationRequest>(clinic.doctor, `/MedicationRequest/${reported}`)
    expect(self).toMatchObject({ status: 'active', intent: 'plan', reportedBoolean: true })
    expect(self.requester).toBeUndefined()
    expect(self.dosageInstruction).toBeUndefined()
  })

  it('leaves MedicationStatement as it was: the same records, without a profile or a prescriber', async () => {
    const clinic = await clinicWithEncounter()
    const full = await fullEntry(clinic)
    const statement = await read<MedicationStatement>(clinic.doctor, `/MedicationStatement/${full}`)
    expect(statement.meta?.profile).toBeUndefined()
    expect(statement).toMatchObject({
      status: 'completed',
      context: { reference: `Encounter/${clinic.encounter}` },
      effectivePeriod: { start: '2024-03-15', end: '2024-09-15' },
      dosage: [
        { text: '500 mg oral twice daily; Take with meals', timing: { code: { text: 'twice daily' } } },
      ],
    })
    expect(statement.dosage?.[0]?.timing?.repeat).toBeUndefined()
    expect(JSON.stringify(statement)).not.toContain('Practitioner/')
    expect(await search(clinic.doctor, `/MedicationStatement?patient=${clinic.patient.id}`)).toEqual(
      await search(clinic.doctor, `/MedicationRequest?patient=${clinic.patient.id}`),
    )
  })

  it('finds by patient, patient+intent, patient+intent+status, patient+intent+encounter and patient+intent+authoredon', async () => {
    const clinic = await clinicWithEncounter()
    const patient = clinic.patient.id
    const completed = await fullEntry(clinic)
    const active = await post(clinic.doctor, medicationsOf(patient), { name: 'Vitamin D3' })
    const other = await createPatient(app, clinic.nurse)
    await post(clinic.doctor, medicationsOf(other), { name: 'Aspirin 81 mg tablet' })

    const found = (query: string) => search(clinic.doctor, `/MedicationRequest?patient=${patient}${query}`)
    expect(await found('')).toEqual([completed, active])
    expect(await found('&intent=plan')).toEqual([completed, active])
    expect(await found('&intent=order,plan')).toEqual([completed, active])
    expect(await found('&intent=http://hl7.org/fhir/CodeSystem/medicationrequest-intent|plan')).toEqual([
      completed,
      active,
    ])
    expect(await found('&intent=order')).toEqual([])
    expect(await found('&intent=plan&status=active')).toEqual([active])
    expect(await found('&intent=plan&status=completed,stopped')).toEqual([completed])
    expect(
      await found('&intent=plan&status=http://hl7.org/fhir/CodeSystem/medicationrequest-status|completed'),
    ).toEqual([completed])
    expect(await found('&intent=plan&status=cancelled')).toEqual([])
    expect(await found(`&intent=plan&encounter=Encounter/${clinic.encounter}`)).toEqual([completed])
    expect(await found(`&intent=plan&encounter=${clinic.encounter + 1000}`)).toEqual([])
    const today = new Date().toISOString().slice(0, 10)
    expect(await found(`&intent=plan&authoredon=${today}`)).toEqual([completed, active])
    expect(await found(`&intent=plan&authoredon=ge${today}`)).toEqual([completed, active])
    expect(await found('&intent=plan&authoredon=lt2020-01-01')).toEqual([])
    expect(await found(`&_id=${active}`)).toEqual([active])

    // The medication is a code, never a Medication resource: nothing to include, the parameter is
    // ignored with an outcome saying so (and refused under handling=strict).
    const included = await fhirGet(
      app,
      clinic.doctor,
      `/MedicationRequest?patient=${patient}&_include=MedicationRequest:medication`,
    )
    expect(included.statusCode).toBe(200)
    const bundle = expectFhir(included) as Bundle
    expect(matchIds(bundle)).toEqual([completed, active])
    expect(bundle.entry?.filter((entry) => entry.search?.mode === 'include')).toEqual([])
    expect(JSON.stringify(bundle.entry?.find((entry) => entry.search?.mode === 'outcome'))).toContain(
      '_include=MedicationRequest:medication',
    )
    // The prescriber, by its reference.
    const withPrescriber = expectFhir(
      await fhirGet(
        app,
        clinic.doctor,
        `/MedicationRequest?patient=${patient}&_include=MedicationRequest:requester`,
      ),
    ) as Bundle
    expect(
      withPrescriber.entry
        ?.filter((entry) => entry.search?.mode === 'include')
        .map((entry) => `${entry.resource?.resourceType}/${entry.resource?.id}`),
    ).toEqual([`Practitioner/${clinic.provider.id}`])
    const strict = await fhirGet(
      app,
      clinic.doctor,
      `/MedicationRequest?patient=${patient}&_include=MedicationRequest:medication`,
      { prefer: 'handling=strict' },
    )
    expect(strict.statusCode).toBe(400)
  })

  it('refuses another organization’s entry (403) and finds none of them', async () => {
    const clinic = await clinicWithEncounter()
    const entry = await fullEntry(clinic)
    const stranger = await (await newOrganization(app)).user('PROVIDER')
    const response = await fhirGet(app, stranger, `/MedicationRequest/${entry}`)
    expect(response.statusCode).toBe(403)
    expect((response.json() as OperationOutcome).resourceType).toBe('OperationOutcome')
    expect((await fhirGet(app, stranger, `/MedicationRequest/${entry + 100000}`)).statusCode).toBe(404)
    expect(await search(stranger, `/MedicationRequest?patient=${clinic.patient.id}`)).toEqual([])
    expect(await search(stranger, `/MedicationRequest?_id=${entry}`)).toEqual([])
  })

  it('keeps a patient’s own account and a patient/MedicationRequest.rs token to the patient’s entries', async () => {
    const clinic = await clinicWithEncounter()
    const mine = await fullEntry(clinic)
    const other = await createPatient(app, clinic.nurse)
    const theirs = await post(clinic.doctor, medicationsOf(other), { name: 'Aspirin 81 mg tablet' })
    const frontDesk = await clinic.org.user('FRONT_DESK')
    const account = await signedInPatient(
      app,
      frontDesk,
      clinic.patient.id,
      `me.${randomUUID()}@example.test`,
    )

    expect(await search(account.token, '/MedicationRequest')).toEqual([mine])
    expect(await search(account.token, `/MedicationRequest?patient=${other}`)).toEqual([])
    expect((await read<MedicationRequest>(account.token, `/MedicationRequest/${mine}`)).id).toBe(String(mine))
    expect((await fhirGet(app, account.token, `/MedicationRequest/${theirs}`)).statusCode).toBe(403)

    const launched = smartToken(
      app,
      clinic.org,
      clinic.doctor,
      ['patient/MedicationRequest.rs'],
      clinic.patient.id,
    )
    expect(await search(launched, '/MedicationRequest?intent=plan')).toEqual([mine])
    expect((await fhirGet(app, launched, `/MedicationRequest/${theirs}`)).statusCode).toBe(403)
    expect((await fhirGet(app, launched, `/MedicationStatement/${mine}`)).statusCode).toBe(403)
  })
})

describe('MedicationRequest writes', () => {
  /** A plan as an integrator sends it, for the clinic's patient. */
  const plan = (clinic: Clinic, extra: Partial<MedicationRequest> = {}): MedicationRequest => ({
    resourceType: 'MedicationRequest',
    status: 'active',
    intent: 'plan',
    medicationCodeableConcept: {
      coding: [{ system: RXNORM, code: '197361' }],
      text: 'Amlodipine 5 mg tablet',
    },
    subject: { reference: `Patient/${clinic.patient.id}` },
    requester: { reference: `Practitioner/${clinic.provider.id}` },
    dosageInstruction: [
      {
        text: 'once daily',
        timing: { code: { text: 'once daily' }, repeat: { boundsPeriod: { start: '2024-05-01' } } },
      },
    ],
    ...extra,
  })

  /** The 422's OperationOutcome, and the elements its issues name. */
  async function refused(user: TestUser, resource: object) {
    const response = await write(user, 'POST', '/MedicationRequest', resource)
    expect(response.statusCode, response.body).toBe(422)
    const outcome = response.json() as OperationOutcome
    expect(outcome.resourceType).toBe('OperationOutcome')
    return { outcome, expressions: outcome.issue?.flatMap((issue) => issue.expression ?? []) ?? [] }
  }

  it('creates an entry through the medications service: prescriber, dates and status as REST shows them', async () => {
    const clinic = await clinicWithEncounter()
    const created = await write(
      clinic.doctor,
      'POST',
      '/MedicationRequest',
      plan(clinic, { encounter: { reference: `Encounter/${clinic.encounter}` } }),
    )
    expect(created.statusCode, created.body).toBe(201)
    const request = expectFhir(created) as MedicationRequest
    expect(usCoreErrors(request, PROFILE)).toEqual([])
    expect(request).toMatchObject({ intent: 'plan', reportedBoolean: false })
    const rest = await app.inject({
      url: `${medicationsOf(clinic.patient.id)}/${request.id}`,
      headers: bearer(clinic.doctor.token),
    })
    expect(rest.json().data).toMatchObject({
      name: 'Amlodipine 5 mg tablet',
      rxnormCode: '197361',
      prescriberId: clinic.provider.id,
      encounterId: clinic.encounter,
      frequency: 'once daily',
      startDate: '2024-05-01',
      status: 'ACTIVE',
    })

    const reported = await write(
      clinic.doctor,
      'POST',
      '/MedicationRequest',
      plan(clinic, { requester: undefined, reportedBoolean: true }),
    )
    expect(reported.statusCode, reported.body).toBe(201)
    expect((reported.json() as MedicationRequest).reportedBoolean).toBe(true)
  })

  it('refuses an intent other than plan with a 422 naming intent', async () => {
    const clinic = await clinicWithEncounter()
    for (const intent of ['order', 'proposal', 'original-order'] as const) {
      const { outcome, expressions } = await refused(clinic.doctor, plan(clinic, { intent }))
      expect(expressions).toEqual(['MedicationRequest.intent'])
      expect(JSON.stringify(outcome)).toContain('must be plan')
    }
    const unknown = await refused(clinic.doctor, { ...plan(clinic), intent: 'prescription' })
    expect(unknown.expressions).toEqual(['MedicationRequest.intent'])
  })

  it('refuses an RxNorm code that is not one, a requester that is no practitioner and a contradicting reportedBoolean (422)', async () => {
    const clinic = await clinicWithEncounter()
    const badCode = await refused(
      clinic.doctor,
      plan(clinic, {
        medicationCodeableConcept: { coding: [{ system: RXNORM, code: 'RX-861007' }], text: 'X' },
      }),
    )
    expect(badCode.expressions).toEqual(['MedicationRequest.medicationCodeableConcept.coding'])

    const patientRequester = await refused(
      clinic.doctor,
      plan(clinic, { requester: { reference: `Patient/${clinic.patient.id}` } }),
    )
    expect(patientRequester.expressions).toEqual(['MedicationRequest.requester'])

    const noSuchPrescriber = await refused(
      clinic.doctor,
      plan(clinic, { requester: { reference: 'Practitioner/2147483000' } }),
    )
    expect(noSuchPrescriber.expressions).toEqual(['MedicationRequest.requester'])

    const contradicting = await refused(clinic.doctor, plan(clinic, { reportedBoolean: true }))
    expect(contradicting.expressions).toEqual(['MedicationRequest.reportedBoolean'])

    const referenced = await refused(
      clinic.doctor,
      plan(clinic, {
        medicationCodeableConcept: undefined,
        medicationReference: { reference: 'Medication/1' },
      }),
    )
    expect(referenced.expressions).toEqual(['MedicationRequest.medicationReference'])
  })
})
