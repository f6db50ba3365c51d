import { type Static, Type } from '@sinclair/typebox'
import {
  Email,
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
} from './common.js'

const strict = { additionalProperties: false } as const

/** The roles an account can hold; the same list as src/access/roles.ts (a compile-time check keeps them equal). */
export const ROLE_NAMES = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING', 'PATIENT', 'USER'] as const

export const RoleName = StringEnum(ROLE_NAMES, {
  description: 'A role, as carried in `realm_access.roles` of the access token',
})
export type RoleName = Static<typeof RoleName>

export const Roles = Type.Array(RoleName, {
  minItems: 1,
  maxItems: ROLE_NAMES.length,
  uniqueItems: true,
  description:
    'The account’s roles, at least one. A change takes effect in the next access token (sign-in or refresh); tokens already issued keep their roles until they expire',
  examples: [['NURSE']],
})

const userNames = {
  firstName: Text(100, { examples: ['Mary'] }),
  lastName: Text(100, { examples: ['Seacole'] }),
}

export const INVITE_MODES = ['email', 'temporaryPassword'] as const

export const CreateUserBody = Named(
  'UserCreate',
  Type.Object(
    {
      email: Email,
      ...userNames,
      roles: Roles,
      invite: StringEnum(INVITE_MODES, {
        description:
          '`email`: the person is mailed a link to choose their password (the password-reset mail, valid 30 minutes; send another with POST /api/users/{id}/reset-password). `temporaryPassword`: the response carries a generated password, once; it must be changed (POST /api/auth/change-password) before the first sign-in',
      }),
    },
    {
      ...strict,
      description:
        'A new account of a person in the caller’s organization. E-mail addresses are unique across the service.',
      examples: [
        {
          email: 'mary.seacole@example.com',
          firstName: 'Mary',
          lastName: 'Seacole',
          roles: ['NURSE'],
          invite: 'email',
        },
      ],
    },
  ),
)
export type CreateUserBody = Static<typeof CreateUserBody>

export const UpdateUserBody = Named(
  'UserUpdate',
  Type.Object(
    { ...userNames, roles: Roles },
    {
      ...strict,
      description:
        'Replaces the names and roles of the account (the e-mail address, which is the sign-in name, does not change).',
      examples: [{ firstName: 'Mary', lastName: 'Seacole', roles: ['NURSE', 'FRONT_DESK'] }],
    },
  ),
)
export type UpdateUserBody = Static<typeof UpdateUserBody>

export const PatchUserBody = Named(
  'UserPatch',
  MergePatch(UpdateUserBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the account: only the members sent change; `roles` replaces the whole list. The merged account is checked like a full replacement (422). Read-only members (`id`, `email`, `active`, …) are refused.',
    examples: [{ roles: ['NURSE', 'FRONT_DESK'] }],
  }),
)
export type PatchUserBody = Static<typeof PatchUserBody>

export const User = Named(
  'User',
  Type.Object({
    id: Id,
    email: Type.String({ description: 'The sign-in name; unique across the service' }),
    firstName: Type.String(),
    lastName: Type.String(),
    roles: Type.Array(RoleName),
    active: Type.Boolean({ description: 'A deactivated account can neither sign in nor refresh its tokens' }),
    passwordChangeRequired: Type.Boolean({
      description:
        'The account has a temporary password, or has not yet chosen one after an invitation: it cannot sign in until it does',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)
export type User = Static<typeof User>

export const CreatedUser = Named(
  'CreatedUser',
  Type.Object({
    ...User.properties,
    temporaryPassword: Nullable(
      Type.String({
        description:
          'With `"invite": "temporaryPassword"` only, and only in this response: the generated password, which must be changed before the first sign-in. Null for an e-mail invitation',
      }),
    ),
  }),
)
export type CreatedUser = Static<typeof CreatedUser>

export const USER_SORT_FIELDS = ['lastName', 'firstName', 'email', 'createdAt', 'updatedAt'] as const

export const UserListQuery = ListQuery(
  USER_SORT_FIELDS,
  {
    role: Type.Optional(RoleName),
    active: Type.Optional(Type.Boolean()),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'Part of the e-mail address, first name, last name or full name, case-insensitive',
      }),
    ),
  },
  { sync: false },
)
export type UserListQuery = Static<typeof UserListQuery>

export const UserEnvelope = Envelope(User)
export const CreatedUserEnvelope = Envelope(CreatedUser)
export const UserPageEnvelope = Envelope(Page(User))
