import { type Static, Type } from '@sinclair/typebox'
import { VisitType } from './appointments.js'
import {
  DateString,
  Envelope,
  Id,
  ListQuery,
  MergePatch,
  Named,
  Nullable,
  Page,
  StringEnum,
  Text,
  Timestamp,
  Version,
} from './common.js'

const strict = { additionalProperties: false } as const
const Optional = <T extends Parameters<typeof Nullable>[0]>(schema: T) => Type.Optional(Nullable(schema))

export const ENCOUNTER_STATUSES = ['DRAFT', 'SIGNED', 'AMENDED'] as const
export type EncounterStatus = (typeof ENCOUNTER_STATUSES)[number]

/**
 * What may be done to an encounter in each status: the one table of the note's lifecycle. The
 * service enforces it and the status description below is written from it. Anything else is 409.
 */
export const ENCOUNTER_OPERATIONS = {
  edit: ['DRAFT'],
  sign: ['DRAFT'],
  addendum: ['SIGNED', 'AMENDED'],
} as const satisfies Record<string, readonly EncounterStatus[]>
export type EncounterOperation = keyof typeof ENCOUNTER_OPERATIONS

const EncounterStatus = StringEnum(ENCOUNTER_STATUSES, {
  description: `DRAFT → SIGNED (sign) → AMENDED (first addendum; later addenda keep AMENDED). Allowed per status: ${Object.entries(
    ENCOUNTER_OPERATIONS,
  )
    .map(([operation, statuses]) => `${operation} while ${statuses.join(' or ')}`)
    .join('; ')}. Anything else is 409. Signing locks the note: its text never changes again.`,
})

const Diagnosis = Type.Object(
  {
    icd10Code: Type.String({
      pattern: '^[A-Z][0-9][0-9A-Z](\\.[0-9A-Z]{1,4})?$',
      description:
        'ICD-10(-CM) code in its dotted form: a letter, a digit, a digit or letter, then optionally a dot and 1–4 digits or letters (format checked, not looked up in a code list)',
      examples: ['I10', 'E11.9', 'S72.001A'],
    }),
    description: Text(255, { examples: ['Essential (primary) hypertension'] }),
  },
  strict,
)

const SoapNoteInput = Type.Object(
  {
    subjective: Optional(Text(20_000)),
    objective: Optional(Text(20_000)),
    assessment: Type.Optional(
      Type.Object(
        {
          text: Optional(Text(20_000)),
          diagnoses: Type.Optional(Type.Array(Diagnosis, { maxItems: 50 })),
        },
        strict,
      ),
    ),
    plan: Optional(Text(20_000)),
  },
  { ...strict, description: 'The SOAP note; every part optional' },
)

const contentProperties = {
  encounterDate: DateString,
  encounterType: VisitType(),
  chiefComplaint: Optional(Text(500)),
  soapNote: Type.Optional(SoapNoteInput),
}

export const CreateEncounterBody = Named(
  'EncounterCreate',
  Type.Object(
    {
      patientId: Id,
      providerId: Id,
      appointmentId: Optional(Id),
      ...contentProperties,
    },
    {
      ...strict,
      description:
        'A new encounter, status DRAFT. Patient, provider and appointment must belong to the caller’s organization; an appointment must be of the same patient and provider, not CANCELLED or NO_SHOW, and have no encounter yet (one encounter per appointment, 409 otherwise). Emits encounter.created.',
      examples: [
        {
          patientId: 1,
          providerId: 1,
          encounterDate: '2030-05-14',
          encounterType: 'OFFICE_VISIT',
          chiefComplaint: 'Headache',
          soapNote: {
            subjective: 'Headache for three days',
            assessment: { diagnoses: [{ icd10Code: 'R51.9', description: 'Headache, unspecified' }] },
            plan: 'Ibuprofen as needed; return in two weeks',
          },
        },
      ],
    },
  ),
)
export type CreateEncounterBody = Static<typeof CreateEncounterBody>

export const UpdateEncounterBody = Named(
  'EncounterUpdate',
  Type.Object(contentProperties, {
    ...strict,
    description:
      'Replaces the note of a DRAFT encounter (optional fields left out are cleared); patient, provider and appointment stay. A signed encounter is 409: add an addendum instead.',
    examples: [
      {
        encounterDate: '2030-05-14',
        encounterType: 'OFFICE_VISIT',
        chiefComplaint: 'Headache',
        soapNote: {
          subjective: 'Headache for three days, worse in the morning',
          plan: 'Ibuprofen as needed',
        },
      },
    ],
  }),
)
export type UpdateEncounterBody = Static<typeof UpdateEncounterBody>

export const PatchEncounterBody = Named(
  'EncounterPatch',
  MergePatch(UpdateEncounterBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of a DRAFT encounter’s note: only the members sent change, `null` removes an optional one (`"soapNote": {"plan": null}` clears the plan and keeps the rest of the note), nested objects merge, arrays (`diagnoses`) are replaced whole. The merged note must pass the same checks as a full replacement (422). Read-only members (`id`, `version`, `status`, …) are refused.',
    examples: [{ soapNote: { assessment: { text: 'Tension-type headache' } }, chiefComplaint: null }],
  }),
)
export type PatchEncounterBody = Static<typeof PatchEncounterBody>

export const AddendumBody = Named(
  'EncounterAddendum',
  Type.Object(
    { text: Text(20_000) },
    {
      ...strict,
      description:
        'Appends a signed addendum (signed by the caller, now) to a SIGNED or AMENDED encounter and sets AMENDED; the original note is never changed.',
      examples: [{ text: 'Lab results reviewed by phone on 2030-05-16: within normal limits.' }],
    },
  ),
)
export type AddendumBody = Static<typeof AddendumBody>

const Signature = { signedBy: Id, signedAt: Timestamp }

export const Encounter = Named(
  'Encounter',
  Type.Object({
    id: Id,
    patientId: Id,
    providerId: Id,
    appointmentId: Nullable(Id),
    encounterDate: DateString,
    encounterType: VisitType(),
    chiefComplaint: Nullable(Type.String()),
    soapNote: Type.Object({
      subjective: Nullable(Type.String()),
      objective: Nullable(Type.String()),
      assessment: Type.Object({
        text: Nullable(Type.String()),
        diagnoses: Type.Array(Type.Object({ icd10Code: Type.String(), description: Type.String() })),
      }),
      plan: Nullable(Type.String()),
    }),
    status: EncounterStatus,
    signedBy: Nullable(Id),
    signedAt: Nullable(Timestamp),
    addenda: Type.Array(Type.Object({ id: Id, text: Type.String(), ...Signature }), {
      description: 'In the order they were added',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    version: Version,
  }),
)
export type Encounter = Static<typeof Encounter>

export const ENCOUNTER_SORT_FIELDS = ['encounterDate', 'status', 'createdAt', 'updatedAt'] as const

export const EncounterListQuery = ListQuery(ENCOUNTER_SORT_FIELDS, {
  patientId: Type.Optional(Id),
  providerId: Type.Optional(Id),
  appointmentId: Type.Optional(Id),
  status: Type.Optional(EncounterStatus),
  encounterType: Type.Optional(VisitType()),
  dateFrom: Type.Optional(Type.String({ format: 'date', description: 'encounterDate on or after' })),
  dateTo: Type.Optional(
    Type.String({ format: 'date', description: 'encounterDate on or before; not before dateFrom' }),
  ),
})
export type EncounterListQuery = Static<typeof EncounterListQuery>

export const EncounterEnvelope = Envelope(Encounter)
export const EncounterPageEnvelope = Envelope(Page(Encounter))
