import { type Static, Type } from '@sinclair/typebox'
import { Envelope, Id, ListQuery, MergePatch, Nullable, Page, Text, Timestamp } from './common.js'
import { RoleName, Roles } from './users.js'

const strict = { additionalProperties: false } as const

const clientProperties = {
  name: Text(100, {
    description: 'What the integration is, e.g. the system that calls the API',
    examples: ['Billing sync'],
  }),
  roles: Roles,
}

export const CreateClientBody = Type.Object(clientProperties, {
  ...strict,
  description:
    'A confidential client for a server-to-server integration (OAuth 2.0 client_credentials at the realm’s token endpoint). It acts as a service account of the caller’s organization with these roles. Its client id is generated from the name; its secret is in the response, once.',
  examples: [{ name: 'Billing sync', roles: ['BILLING'] }],
})
export type CreateClientBody = Static<typeof CreateClientBody>

export const UpdateClientBody = Type.Object(clientProperties, {
  ...strict,
  description:
    'Replaces the name and roles of the client. Roles take effect in its next access token; tokens already issued keep theirs until they expire.',
  examples: [{ name: 'Billing sync', roles: ['BILLING', 'FRONT_DESK'] }],
})
export type UpdateClientBody = Static<typeof UpdateClientBody>

export const PatchClientBody = MergePatch(UpdateClientBody, {
  description:
    'A JSON Merge Patch (RFC 7396) of the client: only the members sent change; `roles` replaces the whole list. Read-only members (`id`, `clientId`, `active`, …) are refused.',
  examples: [{ roles: ['BILLING'] }],
})
export type PatchClientBody = Static<typeof PatchClientBody>

export const Client = Type.Object({
  id: Id,
  clientId: Type.String({ description: 'The OAuth client_id the integration authenticates with' }),
  name: Type.String(),
  roles: Type.Array(RoleName),
  active: Type.Boolean({ description: 'A deactivated client is refused at the token endpoint' }),
  serviceAccountUserId: Type.Integer({
    minimum: 1,
    maximum: 2_147_483_647,
    description: 'The user the client acts as: the `userId` of its calls in the audit trail',
  }),
  previousSecretExpiresAt: Nullable(
    Type.String({
      format: 'date-time',
      description: 'After a rotation: until when the previous secret still works; null otherwise',
    }),
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
})
export type Client = Static<typeof Client>

export const ClientWithSecret = Type.Object({
  ...Client.properties,
  secret: Type.String({
    description: 'The client secret, shown only in this response; the service keeps only a hash of it',
  }),
})
export type ClientWithSecret = Static<typeof ClientWithSecret>

export const CLIENT_SORT_FIELDS = ['name', 'clientId', 'createdAt', 'updatedAt'] as const

export const ClientListQuery = ListQuery(
  CLIENT_SORT_FIELDS,
  { active: Type.Optional(Type.Boolean()) },
  { sync: false },
)
export type ClientListQuery = Static<typeof ClientListQuery>

export const ClientEnvelope = Envelope(Client)
export const ClientWithSecretEnvelope = Envelope(ClientWithSecret)
export const ClientPageEnvelope = Envelope(Page(Client))
