import type { Coding, Extension, Patient } from '@medplum/fhirtypes'
import type { PatientRow } from '../../../db/tables/patients.js'
import {
  CDC_RACE_ETHNICITY_SYSTEM,
  GENDER_IDENTITIES,
  NULL_FLAVOR_SYSTEM,
  NULL_FLAVORS,
  OMB_ETHNICITY_CATEGORIES,
  OMB_RACE_CATEGORIES,
  SNOMED_SYSTEM,
} from '../../../schemas/patient-demographics.js'
import type { CreatePatientBody } from '../../../schemas/patients.js'
import { DETAILED_ETHNICITIES, DETAILED_RACES } from '../../../schemas/race-ethnicity-codes.js'
import { withoutUndefined } from './resource-elements.js'

const EXTENSION = 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-'
export const RACE = `${EXTENSION}race`
export const ETHNICITY = `${EXTENSION}ethnicity`
export const BIRTH_SEX = `${EXTENSION}birthsex`
export const GENDER_IDENTITY = `${EXTENSION}genderIdentity`

type Codes = Readonly<Record<string, string>>

const coding = (code: string, displays: Codes, system: string): Coding => ({
  system: NULL_FLAVORS.has(code) ? NULL_FLAVOR_SYSTEM : system,
  code,
  display: displays[code] ?? code,
})

// US Core requires the text of a race or ethnicity: without the patient's words, the categories'.
const defaultText = (categories: readonly string[], displays: Codes) =>
  categories.map((code) => displays[code] ?? code).join(', ')

function categorized(
  url: string,
  categories: readonly string[],
  detailed: readonly string[],
  text: string | null,
  displays: { categories: Codes; detailed: Codes },
): Extension {
  return {
    url,
    extension: [
      ...categories.map((code) => ({
        url: 'ombCategory',
        valueCoding: coding(code, displays.categories, CDC_RACE_ETHNICITY_SYSTEM),
      })),
      ...detailed.map((code) => ({
        url: 'detailed',
        valueCoding: coding(code, displays.detailed, CDC_RACE_ETHNICITY_SYSTEM),
      })),
      { url: 'text', valueString: text ?? defaultText(categories, displays.categories) },
    ],
  }
}

const RACE_CODES = { categories: OMB_RACE_CATEGORIES, detailed: DETAILED_RACES }
const ETHNICITY_CODES = { categories: OMB_ETHNICITY_CATEGORIES, detailed: DETAILED_ETHNICITIES }

/** The US Core race, ethnicity, birth sex and gender identity extensions of a patient's row. */
export function demographicExtensions(row: PatientRow): Extension[] | undefined {
  const extensions: Extension[] = [
    ...(row.race_categories
      ? [categorized(RACE, row.race_categories, row.race_detailed ?? [], row.race_text, RACE_CODES)]
      : []),
    ...(row.ethnicity_category
      ? [
          categorized(
            ETHNICITY,
            [row.ethnicity_category],
            row.ethnicity_detailed ?? [],
            row.ethnicity_text,
            ETHNICITY_CODES,
          ),
        ]
      : []),
    ...(row.birth_sex ? [{ url: BIRTH_SEX, valueCode: row.birth_sex }] : []),
    ...(row.gender_identity
      ? [
          {
            url: GENDER_IDENTITY,
            valueCodeableConcept: { coding: [coding(row.gender_identity, GENDER_IDENTITIES, SNOMED_SYSTEM)] },
          },
        ]
      : []),
  ]
  return extensions.length > 0 ? extensions : undefined
}

type Demographics = Pick<CreatePatientBody, 'race' | 'ethnicity' | 'birthSex' | 'genderIdentity'>

/**
 * The REST fields of a Patient's US Core extensions. Codes are taken as sent, for the body's schema
 * to refuse; a coding of another system, or text that is only the categories' default, is not
 * kept, so the write's preview shows what is dropped.
 */
export function demographicsOf(patient: Patient): Demographics {
  const extension = (url: string) => patient.extension?.find((candidate) => candidate.url === url)
  const parts = (of: Extension | undefined, url: string) =>
    (of?.extension ?? []).filter((part) => part.url === url)
  const codes = (of: Extension | undefined, url: string) =>
    parts(of, url).map((part) => part.valueCoding?.code as string)
  const text = (of: Extension | undefined, categories: string[], displays: Codes) => {
    const given = parts(of, 'text')[0]?.valueString
    return given === undefined || given === defaultText(categories, displays) ? undefined : given
  }
  const race = extension(RACE)
  const ethnicity = extension(ETHNICITY)
  const raceCategories = codes(race, 'ombCategory')
  const ethnicityCategories = codes(ethnicity, 'ombCategory')
  return {
    race:
      race &&
      withoutUndefined({
        categories: raceCategories as NonNullable<Demographics['race']>['categories'],
        detailed: codes(race, 'detailed'),
        text: text(race, raceCategories, OMB_RACE_CATEGORIES),
      }),
    ethnicity:
      ethnicity &&
      withoutUndefined({
        category: ethnicityCategories[0] as NonNullable<Demographics['ethnicity']>['category'],
        detailed: codes(ethnicity, 'detailed'),
        text: text(ethnicity, ethnicityCategories, OMB_ETHNICITY_CATEGORIES),
      }),
    birthSex: extension(BIRTH_SEX)?.valueCode as Demographics['birthSex'],
    genderIdentity: extension(GENDER_IDENTITY)?.valueCodeableConcept?.coding?.[0]
      ?.code as Demographics['genderIdentity'],
  }
}
