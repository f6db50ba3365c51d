import { type Static, Type } from '@sinclair/typebox'
import { Email, Envelope, Id, Named, Nullable, StringEnum, Timestamp } from './common.js'
import { INVITE_MODES } from './users.js'

export const PatientAccountBody = Named(
  'PatientAccountCreate',
  Type.Object(
    {
      email: Email,
      invite: StringEnum(INVITE_MODES, {
        default: 'email',
        description:
          '`email` (the default): the patient is mailed a link to choose their password (the password-reset mail, valid 30 minutes; an administrator sends another with POST /api/users/{id}/reset-password). `temporaryPassword`: the response carries a generated password, once, to hand to the patient; it must be changed (POST /api/auth/change-password) before the first sign-in',
      }),
    },
    {
      additionalProperties: false,
      description:
        'The patient’s own account: its sign-in name (unique across the service); its names are the patient record’s.',
      examples: [{ email: 'jane.doe@example.com' }],
    },
  ),
)
export type PatientAccountBody = Static<typeof PatientAccountBody>

export const PatientAccount = Named(
  'PatientAccount',
  Type.Object({
    id: Id,
    email: Type.String({ description: 'The sign-in name; unique across the service' }),
    active: Type.Boolean({ description: 'A deactivated account can neither sign in nor refresh its tokens' }),
    createdAt: Timestamp,
  }),
)
export type PatientAccount = Static<typeof PatientAccount>

export const CreatedPatientAccount = Named(
  'CreatedPatientAccount',
  Type.Object({
    ...PatientAccount.properties,
    temporaryPassword: Nullable(
      Type.String({
        description:
          'With `"invite": "temporaryPassword"` only, and only in this response: the generated password, which must be changed before the first sign-in. Null for an e-mail invitation',
      }),
    ),
  }),
)
export type CreatedPatientAccount = Static<typeof CreatedPatientAccount>

export const PatientAccountEnvelope = Envelope(PatientAccount)
export const CreatedPatientAccountEnvelope = Envelope(CreatedPatientAccount)
