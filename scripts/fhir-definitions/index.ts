import { writeFile } from 'node:fs/promises'
import { DEFINITIONS_FILE } from '../../src/modules/fhir/validation/validated-types.js'
import { validationDefinitions } from './definitions.js'
import { raceEthnicityModule } from './race-ethnicity.js'
import { ucumCommonUnitsModule } from './ucum-common.js'

// npm run fhir:definitions: rewrites the definitions FHIR writes are validated against, the race
// and ethnicity codes patients are checked against, and the UCUM units lab results are coded in.
await writeFile(DEFINITIONS_FILE, `${JSON.stringify(validationDefinitions())}\n`)
console.log(`wrote ${DEFINITIONS_FILE.pathname}`)
const codes = new URL('../../schemas/race-ethnicity-codes.ts', import.meta.url)
await writeFile(codes, raceEthnicityModule())
console.log(`wrote ${codes.pathname}`)
const units = new URL('../../src/modules/fhir/ucum-common-units.ts', import.meta.url)
await writeFile(units, ucumCommonUnitsModule())
console.log(`wrote ${units.pathname}`)
