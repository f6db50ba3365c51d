import { writeFile } from 'node:fs/promises'
import { DEFINITIONS_FILE } from '../../src/modules/fhir/validation/validated-types.js'
import { validationDefinitions } from './definitions.js'

// npm run fhir:definitions: rewrites the definitions FHIR writes are validated against.
await writeFile(DEFINITIONS_FILE, `${JSON.stringify(validationDefinitions())}\n`)
console.log(`wrote ${DEFINITIONS_FILE.pathname}`)
