import { type Static, Type } from '@sinclair/typebox'
import {
  AddressData,
  AddressInput,
  DateString,
  Deleted,
  Email,
  Envelope,
  Id,
  ListQuery,
  MergePatch,
  Named,
  Nullable,
  Page,
  PhoneNumber,
  StringEnum,
  Text,
  Timestamp,
  Version,
} from './common.js'
import {
  BirthSex,
  Ethnicity,
  EthnicityInput,
  GenderIdentity,
  Race,
  RaceInput,
} from './patient-demographics.js'

export const PATIENT_STATUSES = ['ACTIVE', 'INACTIVE', 'DECEASED'] as const
const GENDERS = ['Male', 'Female', 'Other', 'Unknown'] as const

const PatientStatus = StringEnum(PATIENT_STATUSES, {
  description: 'ACTIVE: in care; INACTIVE: no longer seen here; DECEASED',
})
const Gender = StringEnum(GENDERS, { description: 'Administrative gender' })
const Mrn = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9-]{0,31}$',
  description: 'Medical record number, unique within the organization',
  examples: ['MRN00012345'],
})
const LanguageTag = Type.String({
  pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
  description: 'BCP 47 language tag',
  examples: ['en', 'es-MX'],
})

const Optional = <T extends Parameters<typeof Nullable>[0]>(schema: T) => Type.Optional(Nullable(schema))

const strict = { additionalProperties: false } as const

const IdentificationInput = Type.Object(
  {
    firstName: Text(100),
    middleName: Optional(Text(100)),
    lastName: Text(100),
    dateOfBirth: Type.String({
      format: 'date',
      description: 'YYYY-MM-DD; a real calendar date, not in the future, not before 1900-01-01',
      examples: ['1984-07-12'],
    }),
    gender: Gender,
  },
  strict,
)

const ContactInput = Type.Object(
  {
    email: Optional(Email),
    phoneNumber: Optional(PhoneNumber),
    address: Optional(AddressInput),
  },
  strict,
)

const EmergencyContactInput = Type.Object(
  {
    name: Text(200),
    relationship: Optional(Text(50)),
    phoneNumber: PhoneNumber,
  },
  strict,
)

const patientInputProperties = {
  identification: IdentificationInput,
  contact: Type.Optional(ContactInput),
  emergencyContact: Optional(EmergencyContactInput),
  preferredLanguage: Optional(LanguageTag),
  race: Optional(RaceInput),
  ethnicity: Optional(EthnicityInput),
  birthSex: Optional(BirthSex),
  genderIdentity: Optional(GenderIdentity),
  mrn: Type.Optional(Mrn),
  status: Type.Optional(PatientStatus),
}

export const CreatePatientBody = Named(
  'PatientCreate',
  Type.Object(patientInputProperties, {
    ...strict,
    description:
      'A new patient. `identification` is required; `mrn` is generated (MRNnnnnnnnn) when omitted; `status` defaults to ACTIVE.',
    examples: [
      {
        identification: { firstName: 'Jane', lastName: 'Doe', dateOfBirth: '1984-07-12', gender: 'Female' },
        contact: { email: 'jane.doe@example.com', phoneNumber: '+1 555 010 4477' },
      },
    ],
  }),
)
export type CreatePatientBody = Static<typeof CreatePatientBody>

export const UpdatePatientBody = Named(
  'PatientUpdate',
  Type.Object(patientInputProperties, {
    ...strict,
    description:
      'Replaces the patient record. Optional fields left out are cleared, except `mrn` and `status`, which keep their current values when omitted.',
    examples: [
      {
        identification: {
          firstName: 'Jane',
          lastName: 'Doe-Smith',
          dateOfBirth: '1984-07-12',
          gender: 'Female',
        },
        contact: { email: 'jane.doe@example.com', phoneNumber: '+1 555 010 4477' },
        preferredLanguage: 'en',
        race: { categories: ['2106-3'], detailed: ['2108-9'] },
        ethnicity: { category: '2186-5' },
        birthSex: 'F',
        genderIdentity: '446141000124107',
      },
    ],
  }),
)
export type UpdatePatientBody = Static<typeof UpdatePatientBody>

export const Patient = Named(
  'Patient',
  Type.Object({
    id: Id,
    mrn: Type.String(),
    status: PatientStatus,
    identification: Type.Object({
      firstName: Type.String(),
      middleName: Nullable(Type.String()),
      lastName: Type.String(),
      dateOfBirth: DateString,
      gender: Gender,
    }),
    contact: Type.Object({
      email: Nullable(Type.String({ format: 'email' })),
      phoneNumber: Nullable(Type.String()),
      address: AddressData,
    }),
    emergencyContact: Nullable(
      Type.Object({
        name: Type.String(),
        relationship: Nullable(Type.String()),
        phoneNumber: Type.String(),
      }),
    ),
    preferredLanguage: Nullable(Type.String()),
    race: Nullable(Race),
    ethnicity: Nullable(Ethnicity),
    birthSex: Nullable(BirthSex),
    genderIdentity: Nullable(GenderIdentity),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Patient = Static<typeof Patient>

export const PATIENT_SORT_FIELDS = [
  'lastName',
  'firstName',
  'dateOfBirth',
  'mrn',
  'createdAt',
  'updatedAt',
] as const

export const PatientListQuery = ListQuery(PATIENT_SORT_FIELDS, {
  status: Type.Optional(PatientStatus),
  firstName: Type.Optional(Type.String({ maxLength: 100, description: 'Exact match, case-insensitive' })),
  lastName: Type.Optional(Type.String({ maxLength: 100, description: 'Exact match, case-insensitive' })),
  dateOfBirth: Type.Optional(DateString),
  gender: Type.Optional(Gender),
  email: Type.Optional(Type.String({ maxLength: 254, description: 'Exact match, case-insensitive' })),
  mrn: Type.Optional(Type.String({ maxLength: 32 })),
})
export type PatientListQuery = Static<typeof PatientListQuery>

export const PatientSearchQuery = ListQuery(
  PATIENT_SORT_FIELDS,
  {
    q: Type.String({
      minLength: 1,
      maxLength: 100,
      pattern: '\\S',
      description:
        'Case-insensitive; every word must match. A word of letters must begin a word of the first, middle or last name (each such word of q a different one; ASCII punctuation separates words), so `kowal ol` finds Olga Kowalski. A word with a digit, `@` or `.` must occur anywhere in the MRN, e-mail, telephone digits or name; a telephone number is compared by its digits.',
    }),
  },
  { sync: false },
)
export type PatientSearchQuery = Static<typeof PatientSearchQuery>

export const PatientEnvelope = Envelope(Patient)
export const PatientPageEnvelope = Envelope(Page(Patient, { tombstones: true }))
export const PatientSearchPageEnvelope = Envelope(Page(Patient, { title: 'PatientSearchPage' }))

export const PatchPatientBody = Named(
  'PatientPatch',
  MergePatch(UpdatePatientBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the patient: only the members sent change, `null` removes an optional one (`"contact": {"email": null}` clears the e-mail and keeps the telephone), arrays and values are replaced. The merged record must pass the same checks as a full replacement (422). Read-only members (`id`, `version`, `createdAt`, …) are refused.',
    examples: [{ contact: { phoneNumber: '+1 555 010 9999' }, preferredLanguage: null }],
  }),
)
export type PatchPatientBody = Static<typeof PatchPatientBody>
export const PatientDeletedEnvelope = Envelope(Deleted)
