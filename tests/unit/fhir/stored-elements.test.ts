import type { Appointment, Patient } from '@medplum/fhirtypes'
import { describe, expect, it } from 'vitest'
import { droppedElements } from '../../../src/modules/fhir/stored-elements.js'

const stored: Patient = {
  resourceType: 'Patient',
  id: '7',
  meta: { versionId: '3', lastUpdated: '2026-11-28T10:00:00.000Z' },
  identifier: [{ use: 'usual', system: 'urn:mrn', value: 'M1' }],
  name: [{ use: 'official', family: 'Doe', given: ['Jane', 'Q'] }],
  telecom: [
    { system: 'email', value: 'jane@example.test' },
    { system: 'phone', value: '+1 555 010 4477' },
  ],
  gender: 'female',
}

describe('droppedElements', () => {
  it('finds nothing dropped in the stored resource itself, or in a part of it', () => {
    expect(droppedElements(stored, stored)).toEqual([])
    expect(
      droppedElements({ resourceType: 'Patient', identifier: [{ system: 'urn:mrn', value: 'M1' }] }, stored),
    ).toEqual([])
  })

  it('ignores the id and version a client copied, and the order of array items', () => {
    const sent: Patient = {
      ...stored,
      id: '99',
      meta: { versionId: '1', lastUpdated: '2020-01-01T00:00:00Z' },
      telecom: [...(stored.telecom ?? [])].reverse(),
    }
    expect(droppedElements(sent, stored)).toEqual([])
  })

  it('names each element not stored as FHIRPath, at the depth it differs', () => {
    const sent: Patient = {
      ...stored,
      meta: { versionId: '3', profile: ['http://example.test/profile'] },
      name: [
        { use: 'official', family: 'Doe', given: ['Jane', 'Q', 'R'] },
        { use: 'nickname', text: 'JD' },
      ],
      telecom: [{ system: 'fax', value: '1' }],
      birthDate: '1990-01-01',
      gender: 'male',
    }
    expect(droppedElements(sent, stored)).toEqual([
      'Patient.meta.profile',
      'Patient.name[0].given[2]',
      'Patient.name[1]',
      'Patient.telecom[0]',
      'Patient.gender',
      'Patient.birthDate',
    ])
  })
})

describe('droppedElements of profiles claimed', () => {
  const claimed: Patient = { ...stored, meta: { ...stored.meta, profile: ['http://example.test/p|2.0.0'] } }

  it('holds a profile named without its version by the claim with one, and no other profile', () => {
    const named = (profile: string[]): Patient => ({ resourceType: 'Patient', meta: { profile } })
    expect(droppedElements(named(['http://example.test/p']), claimed)).toEqual([])
    expect(droppedElements(named(['http://example.test/p|2.0.0']), claimed)).toEqual([])
    expect(droppedElements(named(['http://example.test/p|1.0.0']), claimed)).toEqual([
      'Patient.meta.profile[0]',
    ])
    expect(droppedElements(named(['http://example.test/p']), stored)).toEqual(['Patient.meta.profile'])
  })
})

describe('droppedElements of date-times', () => {
  const appointment = (start: string): Appointment => ({
    resourceType: 'Appointment',
    status: 'booked',
    start,
    participant: [{ status: 'accepted' }],
  })
  const stored = appointment('2030-05-14T08:00:00.000Z')

  it('holds the same moment written with another offset or precision', () => {
    for (const start of ['2030-05-14T08:00:00Z', '2030-05-14T10:00:00+02:00', '2030-05-14T08:00:00.0000Z']) {
      expect(droppedElements(appointment(start), stored), start).toEqual([])
    }
  })

  it('drops another moment, a finer one, and a date-time without a zone', () => {
    for (const start of ['2030-05-14T08:00:01Z', '2030-05-14T08:00:00.0001Z', '2030-05-14T08:00:00']) {
      expect(droppedElements(appointment(start), stored), start).toEqual(['Appointment.start'])
    }
  })
})
