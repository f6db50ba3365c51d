import type { Extension, Patient } from '@medplum/fhirtypes'
import { describe, expect, it } from 'vitest'
import { usCoreErrors, usCoreFile, usCoreValueSetCodes } from '../../helpers/us-core.js'

const PATIENT = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient'
const RACE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-race'
const ROLE = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-practitionerrole'
const CDC = 'urn:oid:2.16.840.1.113883.6.238'

const minimal: Patient = {
  resourceType: 'Patient',
  identifier: [{ system: 'urn:example:mrn', value: 'MRN1' }],
  name: [{ family: 'Doe', given: ['Jane'] }],
  gender: 'female',
}

const race = (parts: Extension[]): Extension => ({ url: RACE, extension: parts })

describe('the US Core 6.1.0 validator of the tests (tests/helpers/us-core.ts)', () => {
  it("finds no error in US Core's own Patient example and in a minimal patient", () => {
    expect(usCoreErrors(usCoreFile<Patient>('example/Patient-example.json'), PATIENT)).toEqual([])
    expect(usCoreErrors(minimal, `${PATIENT}|6.1.0`)).toEqual([])
  })

  it('finds the missing identifier and the missing name', () => {
    const { identifier: _identifier, ...withoutIdentifier } = minimal
    const { name: _name, ...withoutName } = minimal
    expect(usCoreErrors(withoutIdentifier, PATIENT).join('\n')).toMatch(/identifier/)
    expect(usCoreErrors(withoutName, PATIENT).join('\n')).toMatch(/name/)
  })

  it('finds a race without its text, and codes outside the required US Core value sets', () => {
    const white = { url: 'ombCategory', valueCoding: { system: CDC, code: '2106-3' } }
    expect(usCoreErrors({ ...minimal, extension: [race([white])] }, PATIENT)).not.toEqual([])
    expect(
      usCoreErrors(
        { ...minimal, extension: [race([white, { url: 'text', valueString: 'White' }])] },
        PATIENT,
      ),
    ).toEqual([])
    const unknown = { url: 'ombCategory', valueCoding: { system: CDC, code: '2108-9' } }
    expect(
      usCoreErrors(
        { ...minimal, extension: [race([unknown, { url: 'text', valueString: 'European' }])] },
        PATIENT,
      ),
    ).toEqual([
      `${RACE} ombCategory: ${CDC}|2108-9 is not in http://hl7.org/fhir/us/core/ValueSet/omb-race-category`,
    ])
    const birthSex = {
      url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-birthsex',
      valueCode: 'X',
    }
    expect(usCoreErrors({ ...minimal, extension: [birthSex] }, PATIENT)).toHaveLength(1)
  })

  it('checks PractitionerRole’s pd-1 (contact information or an endpoint), which Medplum cannot evaluate', () => {
    const role = { resourceType: 'PractitionerRole' as const, practitioner: { reference: 'Practitioner/1' } }
    const email = { system: 'email' as const, value: 'grace@example.test' }
    const phone = { system: 'phone' as const, value: '+15555550100' }
    expect(usCoreErrors({ ...role, telecom: [email] }, ROLE)).toEqual([])
    expect(usCoreErrors({ ...role, telecom: [email, phone] }, ROLE)).toEqual([])
    expect(usCoreErrors({ ...role, endpoint: [{ reference: 'Endpoint/1' }] }, ROLE)).toEqual([])
    expect(usCoreErrors(role, ROLE)).toEqual(['Constraint not met: telecom or endpoint at PractitionerRole'])
  })

  it('expands the ValueSets from their VSAC includes: detailed race excludes the OMB categories', () => {
    const detailed = usCoreValueSetCodes('http://hl7.org/fhir/us/core/ValueSet/detailed-race')
    expect(detailed.has(`${CDC}|2108-9`)).toBe(true)
    expect(detailed.has(`${CDC}|2106-3`)).toBe(false)
    expect(detailed.size).toBeGreaterThan(900)
  })
})
