import { Type } from '@sinclair/typebox'
import { Nullable, StringEnum } from './common.js'
import { DETAILED_ETHNICITIES, DETAILED_RACES } from './race-ethnicity-codes.js'

/**
 * The demographic codes of US Core 6.1.0 (USCDI): race and ethnicity in the CDC Race & Ethnicity
 * code system, birth sex, gender identity. Each list is the codes with their displays; the US Core
 * ValueSets include them from VSAC. Where the service is not sure a null flavor is in a VSAC set,
 * it is left out: a code refused here can be added, a code stored that the set does not hold
 * could not be served.
 */
export const CDC_RACE_ETHNICITY_SYSTEM = 'urn:oid:2.16.840.1.113883.6.238'
export const NULL_FLAVOR_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-NullFlavor'
export const SNOMED_SYSTEM = 'http://snomed.info/sct'

const UNKNOWN = { UNK: 'unknown', ASKU: 'asked but unknown' } as const

/** OMB race categories (US Core omb-race-category). */
export const OMB_RACE_CATEGORIES = {
  '1002-5': 'American Indian or Alaska Native',
  '2028-9': 'Asian',
  '2054-5': 'Black or African American',
  '2076-8': 'Native Hawaiian or Other Pacific Islander',
  '2106-3': 'White',
  ...UNKNOWN,
} as const

/** OMB ethnicity categories (US Core omb-ethnicity-category). */
export const OMB_ETHNICITY_CATEGORIES = {
  '2135-2': 'Hispanic or Latino',
  '2186-5': 'Not Hispanic or Latino',
  ...UNKNOWN,
} as const

/** Sex assigned at birth (US Core birthsex): F and M of AdministrativeGender, UNK a null flavor. */
const BIRTH_SEXES = { F: 'Female', M: 'Male', UNK: 'Unknown' } as const

/** Gender identity (US Core 6.1.0 binds VSAC 2.16.840.1.113762.1.4.1021.32, extensibly). */
export const GENDER_IDENTITIES = {
  '446151000124109': 'Identifies as male gender',
  '446141000124107': 'Identifies as female gender',
  '33791000087105': 'Identifies as nonbinary gender',
  '446131000124102': 'Identifies as non-conforming gender',
  '407377005': 'Male-to-female transsexual',
  '407376001': 'Female-to-male transsexual',
  OTH: 'other',
  ...UNKNOWN,
} as const

/** The null flavors among the codes above; every other code is of the list's own system. */
export const NULL_FLAVORS: ReadonlySet<string> = new Set(['UNK', 'ASKU', 'OTH'])

const listed = (codes: Record<string, string>) =>
  Object.entries(codes)
    .map(([code, display]) => `\`${code}\` ${display}`)
    .join('; ')

const keys = <T extends object>(codes: T) => Object.keys(codes) as (keyof T & string)[]

const CdcCode = (description: string) =>
  Type.String({ pattern: '^[0-9]{4}-[0-9]$', description, examples: ['2108-9'] })

const DetailedCodes = (description: string) =>
  Type.Array(CdcCode(description), { maxItems: 20, uniqueItems: true })

const DemographicText = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: '\\S',
  description: 'The answer as the patient gave it',
})

const RaceCategory = StringEnum(keys(OMB_RACE_CATEGORIES), {
  description: `OMB race category: ${listed(OMB_RACE_CATEGORIES)}`,
})
const EthnicityCategory = StringEnum(keys(OMB_ETHNICITY_CATEGORIES), {
  description: `OMB ethnicity category: ${listed(OMB_ETHNICITY_CATEGORIES)}`,
})
export const BirthSex = StringEnum(keys(BIRTH_SEXES), {
  description: `Sex assigned at birth: ${listed(BIRTH_SEXES)}`,
})
export const GenderIdentity = StringEnum(keys(GENDER_IDENTITIES), {
  description: `Gender identity (SNOMED CT, or a null flavor): ${listed(GENDER_IDENTITIES)}`,
})

const DETAILED_RACE_TEXT = `Detailed race codes of the CDC Race & Ethnicity code system (${Object.keys(DETAILED_RACES).length} codes under the OMB categories, e.g. \`2108-9\` European)`
const DETAILED_ETHNICITY_TEXT = `Detailed ethnicity codes of the CDC Race & Ethnicity code system (${Object.keys(DETAILED_ETHNICITIES).length} codes under Hispanic or Latino, e.g. \`2148-5\` Mexican)`

export const RaceInput = Type.Object(
  {
    categories: Type.Array(RaceCategory, { minItems: 1, maxItems: 7, uniqueItems: true }),
    detailed: Type.Optional(DetailedCodes(DETAILED_RACE_TEXT)),
    text: Type.Optional(Nullable(DemographicText)),
  },
  { additionalProperties: false, description: 'Race: one or more OMB categories, detailed codes, text' },
)

export const EthnicityInput = Type.Object(
  {
    category: EthnicityCategory,
    detailed: Type.Optional(DetailedCodes(DETAILED_ETHNICITY_TEXT)),
    text: Type.Optional(Nullable(DemographicText)),
  },
  { additionalProperties: false, description: 'Ethnicity: the OMB category, detailed codes, text' },
)

export const Race = Type.Object({
  categories: Type.Array(RaceCategory),
  detailed: Type.Array(Type.String()),
  text: Nullable(Type.String()),
})

export const Ethnicity = Type.Object({
  category: EthnicityCategory,
  detailed: Type.Array(Type.String()),
  text: Nullable(Type.String()),
})
