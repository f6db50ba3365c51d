import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { DETAILED_ETHNICITIES, DETAILED_RACES } from '../../../schemas/race-ethnicity-codes.js'
import { validationDefinitions } from '../../../scripts/fhir-definitions/definitions.js'
import { raceEthnicityCodes } from '../../../scripts/fhir-definitions/race-ethnicity.js'
import { ucumCommonUnits } from '../../../scripts/fhir-definitions/ucum-common.js'
import { UCUM_COMMON_UNITS } from '../../../src/modules/fhir/ucum-common-units.js'
import { DEFINITIONS_FILE, VALIDATED_TYPES } from '../../../src/modules/fhir/validation/validated-types.js'

describe('the FHIR definitions writes are validated against', () => {
  it('are what npm run fhir:definitions writes from the published R4 definitions', async () => {
    const committed = JSON.parse(await readFile(DEFINITIONS_FILE, 'utf8'))
    expect(committed).toEqual(JSON.parse(JSON.stringify(validationDefinitions())))
  })

  it('hold every validated type and the data types', async () => {
    const committed = JSON.parse(await readFile(DEFINITIONS_FILE, 'utf8')) as {
      entry: { resource: { id: string } }[]
    }
    const ids = new Set(committed.entry.map((entry) => entry.resource.id))
    for (const type of [...VALIDATED_TYPES, 'HumanName', 'CodeableConcept', 'date'])
      expect(ids, type).toContain(type)
  })
})

describe('the detailed race and ethnicity codes patients are checked against', () => {
  it('are what npm run fhir:definitions writes from the v3 Race and Ethnicity code systems', () => {
    const { races, ethnicities } = raceEthnicityCodes()
    expect(DETAILED_RACES).toEqual(races)
    expect(DETAILED_ETHNICITIES).toEqual(ethnicities)
    expect(DETAILED_RACES['2108-9']).toBe('European')
    expect(DETAILED_RACES['2106-3']).toBeUndefined()
  })
})

describe('the UCUM units lab results are coded in', () => {
  it('are what npm run fhir:definitions writes from the ValueSet ucum-common', () => {
    expect([...UCUM_COMMON_UNITS]).toEqual(ucumCommonUnits())
    for (const unit of ['mg/dL', 'mmol/L', '10*3/uL', '%', '[IU]/L', '{cells}/uL']) {
      expect(UCUM_COMMON_UNITS.has(unit), unit).toBe(true)
    }
    for (const unit of ['mg/dl', 'cells/uL', 'x10 E3 per uL', 'MG/DL']) {
      expect(UCUM_COMMON_UNITS.has(unit), unit).toBe(false)
    }
  })
})
