import type { Bundle, Observation, OperationOutcome, Patient } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  bearer,
  createPatient,
  newOrganization,
  patientBody,
  type TestUser,
} from '../../helpers/factories.js'
import { expectFhir, fhirGet, matchIds } from '../../helpers/fhir.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const get = (user: TestUser, path: string, headers: Record<string, string> = {}) =>
  fhirGet(app, user, path, headers)

/** Every match of a search, following its next links to the end (at most 20 pages). */
async function allPages(user: TestUser, path: string): Promise<Bundle[]> {
  const pages: Bundle[] = []
  let url: string | undefined = path
  while (url !== undefined && pages.length < 20) {
    const response = await get(user, url)
    expect(response.statusCode, response.body).toBe(200)
    const bundle = expectFhir(response) as Bundle
    pages.push(bundle)
    const next = bundle.link?.find((link) => link.relation === 'next')?.url
    url = next === undefined ? undefined : next.slice(next.indexOf('/fhir/R4') + '/fhir/R4'.length)
  }
  return pages
}

const allMatches = (pages: Bundle[]) => pages.flatMap(matchIds)

async function measured(nurse: TestUser, patientId: number, recordedAt: string) {
  const response = await app.inject({
    method: 'POST',
    url: `/api/patients/${patientId}/vitals`,
    headers: bearer(nurse.token),
    payload: { recordedAt, heartRate: 70 },
  })
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data.id as number
}

describe('GET /fhir/R4/[type]?_sort=', () => {
  it('orders observations by date either way, ties by id, across pages with none lost or repeated', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const patientId = await createPatient(app, nurse)
    const at = {
      march: '2024-03-01T08:00:00Z',
      january: '2024-01-15T08:00:00Z',
      february: '2024-02-10T08:00:00Z',
    }
    const ids = {
      march: await measured(nurse, patientId, at.march),
      januaryA: await measured(nurse, patientId, at.january),
      february: await measured(nurse, patientId, at.february),
      januaryB: await measured(nurse, patientId, at.january),
      marchB: await measured(nurse, patientId, at.march),
    }
    const ascending = [ids.januaryA, ids.januaryB, ids.february, ids.march, ids.marchB]

    // The panels (each measurement of theirs is an Observation too, of the same date).
    const up = await allPages(nurse, `/Observation?patient=${patientId}&code=85353-1&_sort=date&_count=2`)
    expect(up).toHaveLength(3)
    expect(allMatches(up)).toEqual(ascending)
    expect(up[0]?.link?.[0]?.url).toContain('_sort=date')
    const dates = up.flatMap((page) =>
      (page.entry ?? []).map((entry) => (entry.resource as Observation).effectiveDateTime),
    )
    expect(dates).toEqual([...dates].sort())

    const down = await allPages(nurse, `/Observation?patient=${patientId}&code=85353-1&_sort=-date&_count=2`)
    expect(allMatches(down)).toEqual([...ascending].reverse())
  })

  it('orders patients by birth date and by last change, and by id when asked for _id', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const family = `Sortable${Date.now()}`
    const born = async (dateOfBirth: string) =>
      createPatient(
        app,
        nurse,
        patientBody({
          identification: { firstName: 'Kim', lastName: family, dateOfBirth, gender: 'Female' },
        }),
      )
    const young = await born('2001-05-05')
    const old = await born('1950-01-01')
    const middle = await born('1980-09-09')
    const twin = await born('1980-09-09')

    const byBirth = await allPages(nurse, `/Patient?family=${family}&_sort=birthdate&_count=3`)
    expect(allMatches(byBirth)).toEqual([old, middle, twin, young])
    const births = byBirth.flatMap((page) =>
      (page.entry ?? []).map((entry) => (entry.resource as Patient).birthDate),
    )
    expect(births).toEqual(['1950-01-01', '1980-09-09', '1980-09-09', '2001-05-05'])

    const touched = await app.inject({
      method: 'PATCH',
      url: `/api/patients/${old}`,
      headers: { ...bearer(nurse.token), 'content-type': 'application/merge-patch+json' },
      payload: { contact: { phoneNumber: '+1 555 010 9999' } },
    })
    expect(touched.statusCode, touched.body).toBe(200)
    const latest = await allPages(nurse, `/Patient?family=${family}&_sort=-_lastUpdated&_count=2`)
    expect(allMatches(latest)[0]).toBe(old)
    expect(allMatches(latest).sort()).toEqual([young, old, middle, twin].sort())

    const byIdDown = await allPages(nurse, `/Patient?family=${family}&_sort=-_id&_count=3`)
    expect(allMatches(byIdDown)).toEqual([twin, middle, old, young])
  })

  it('ignores a sort it cannot do and says so, or refuses it with Prefer: handling=strict', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const first = await createPatient(app, nurse)
    const lenient = await get(nurse, `/Patient?_id=${first}&_sort=family`)
    expect(lenient.statusCode).toBe(200)
    const bundle = expectFhir(lenient) as Bundle
    expect(matchIds(bundle)).toEqual([first])
    const outcome = bundle.entry?.find((entry) => entry.search?.mode === 'outcome')
      ?.resource as OperationOutcome
    expect(outcome.issue?.[0]?.diagnostics).toContain('_sort=family')
    expect(bundle.link?.[0]?.url).not.toContain('_sort')

    const strict = await get(nurse, `/Patient?_sort=birthdate,family`, { prefer: 'handling=strict' })
    expect(strict.statusCode).toBe(400)
    expect((expectFhir(strict) as OperationOutcome).issue?.[0]?.diagnostics).toContain('_sort')
  })

  it('refuses a cursor made for another order, or not made here, with 400', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const patientId = await createPatient(app, nurse)
    await measured(nurse, patientId, '2024-01-01T00:00:00Z')
    await measured(nurse, patientId, '2024-01-02T00:00:00Z')
    const first = expectFhir(
      await get(nurse, `/Observation?patient=${patientId}&_sort=date&_count=1`),
    ) as Bundle
    const next = first.link?.find((link) => link.relation === 'next')?.url ?? ''
    const cursor = new URL(next).searchParams.get('_cursor') ?? ''
    expect(cursor).not.toBe('')
    for (const path of [
      `/Observation?patient=${patientId}&_sort=-date&_cursor=${cursor}`,
      `/Observation?patient=${patientId}&_cursor=${cursor}`,
      `/Observation?patient=${patientId}&_sort=date&_cursor=${Buffer.from('["date",1,"x"]').toString('base64url')}`,
      `/Observation?patient=${patientId}&_sort=date&_cursor=not-a-cursor`,
    ]) {
      const response = await get(nurse, path)
      expect(response.statusCode, path).toBe(400)
      expect((expectFhir(response) as OperationOutcome).resourceType).toBe('OperationOutcome')
    }
  })
})
