import type { CreatePatientBody } from '../../../schemas/patients.js'
import { DETAILED_ETHNICITIES, DETAILED_RACES } from '../../../schemas/race-ethnicity-codes.js'
import { type FieldProblems, invalidFields } from '../../errors.js'

const unknownCodes = (
  field: string,
  codes: readonly string[] | undefined,
  known: Readonly<Record<string, string>>,
) =>
  (codes ?? []).flatMap((code, index) =>
    Object.hasOwn(known, code) ? [] : [{ path: `${field}.${index}`, message: `unknown code ${code}` }],
  )

/**
 * The detailed race and ethnicity codes must be in US Core's detailed-race and detailed-ethnicity
 * value sets (required bindings): too many to list in the schema, they are checked here.
 */
export function checkDetailedCodes({ race, ethnicity }: CreatePatientBody): void {
  const problems: FieldProblems = [
    ...unknownCodes('race.detailed', race?.detailed, DETAILED_RACES),
    ...unknownCodes('ethnicity.detailed', ethnicity?.detailed, DETAILED_ETHNICITIES),
  ]
  if (problems.length > 0) throw invalidFields(problems)
}
