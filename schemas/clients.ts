import { type Static, Type } from '@sinclair/typebox'
import {
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
import { RoleName, Roles } from './users.js'

const strict = { additionalProperties: false } as const

/** The algorithms a client assertion may be signed with (SMART Backend Services: RS384 and ES384). */
export const ASSERTION_ALGORITHMS = ['RS384', 'ES384'] as const
export const AssertionAlgorithm = StringEnum(ASSERTION_ALGORITHMS, {
  description: 'RS384 for an RSA key (2048 bits or more), ES384 for an EC key on P-384',
})

const Base64Url = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '^[A-Za-z0-9_-]+$' })

/**
 * A public key as a JWK (RFC 7517). Only public members are declared, so a key with private
 * material (`d`, `p`, `q`, `dp`, `dq`, `qi`, `oth`) or a symmetric key (`k`) is refused (422).
 */
const PublicJwk = Named(
  'PublicJwk',
  Type.Object(
    {
      kty: StringEnum(['RSA', 'EC']),
      kid: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      alg: Type.Optional(AssertionAlgorithm),
      use: Type.Optional(Type.Literal('sig')),
      key_ops: Type.Optional(Type.Array(Type.String({ maxLength: 20 }), { maxItems: 8, uniqueItems: true })),
      ext: Type.Optional(Type.Boolean()),
      n: Type.Optional(Base64Url(2800)),
      e: Type.Optional(Base64Url(16)),
      crv: Type.Optional(Type.Literal('P-384')),
      x: Type.Optional(Base64Url(64)),
      y: Type.Optional(Base64Url(64)),
      x5c: Type.Optional(Type.Array(Type.String({ maxLength: 8192 }), { maxItems: 4 })),
      x5t: Type.Optional(Base64Url(64)),
      'x5t#S256': Type.Optional(Base64Url(64)),
    },
    { ...strict, description: 'A public key (JWK): RSA (`n`, `e`) or EC P-384 (`crv`, `x`, `y`)' },
  ),
)

export const Jwks = Named(
  'Jwks',
  Type.Object(
    { keys: Type.Array(PublicJwk, { minItems: 1, maxItems: 10 }) },
    {
      ...strict,
      description:
        'The public keys that verify the client’s signed assertions (`private_key_jwt`: a SMART Backend Services client’s, or a confidential SMART app’s); public members only',
    },
  ),
)
export type Jwks = Static<typeof Jwks>

const JwksUrl = Type.String({
  format: 'uri',
  maxLength: 2048,
  description:
    'An `https://` address where the client publishes its public keys (a JWKS). Fetched when needed and cached for 5 minutes, again at once (at most every 10 s) for an unknown `kid`. Hosts resolving to loopback, private, link-local or metadata addresses are refused, at registration and at every fetch.',
  examples: ['https://sync.example.com/.well-known/jwks.json'],
})

const clientProperties = {
  name: Text(100, {
    description: 'What the integration is, e.g. the system that calls the API',
    examples: ['Billing sync'],
  }),
  roles: Roles,
  jwks: Type.Optional(Jwks),
  jwksUrl: Type.Optional(JwksUrl),
}

const keysOrSecret =
  'With `jwks` or `jwksUrl` (not both) the client authenticates at the token endpoint with a signed assertion (`private_key_jwt`, RS384 or ES384).'

export const CreateClientBody = Named(
  'ClientCreate',
  Type.Object(clientProperties, {
    ...strict,
    description: `A confidential client for a server-to-server integration (OAuth 2.0 client_credentials at the realm’s token endpoint). It acts as a service account of the caller’s organization with these roles. Its client id is generated from the name. ${keysOrSecret} Registered with keys it gets no secret (rotate-secret gives it one); otherwise its secret is in the response, once.`,
    examples: [
      { name: 'Billing sync', roles: ['BILLING'] },
      {
        name: 'Population health export',
        roles: ['PROVIDER'],
        jwksUrl: 'https://export.example.com/.well-known/jwks.json',
      },
    ],
  }),
)
export type CreateClientBody = Static<typeof CreateClientBody>

export const UpdateClientBody = Named(
  'ClientUpdate',
  Type.Object(clientProperties, {
    ...strict,
    description: `Replaces the name, roles and keys of the client: a body without \`jwks\` or \`jwksUrl\` removes its keys (refused for a client without a secret). ${keysOrSecret} Roles take effect in its next access token; tokens already issued keep theirs until they expire.`,
    examples: [{ name: 'Billing sync', roles: ['BILLING', 'FRONT_DESK'] }],
  }),
)
export type UpdateClientBody = Static<typeof UpdateClientBody>

export const PatchClientBody = Named(
  'ClientPatch',
  MergePatch(UpdateClientBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the client: only the members sent change; `roles` and `jwks.keys` replace the whole list, `null` removes `jwks` or `jwksUrl`. Read-only members (`id`, `clientId`, `active`, `keys`, …) are refused.',
    examples: [{ roles: ['BILLING'] }],
  }),
)
export type PatchClientBody = Static<typeof PatchClientBody>

export const Client = Named(
  'Client',
  Type.Object({
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
    hasSecret: Type.Boolean({
      description: 'The client may authenticate with a secret (false: with its keys only)',
    }),
    jwksUrl: Nullable(
      Type.String({ description: 'Where the client publishes its public keys; null when none or stored' }),
    ),
    keys: Type.Array(
      Type.Object({
        kid: Nullable(Type.String({ description: 'The key id; null for a key registered without one' })),
        alg: AssertionAlgorithm,
      }),
      { description: 'The registered public keys (`jwks`), by id and algorithm; empty when none or by URL' },
    ),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)
export type Client = Static<typeof Client>

export const ClientWithSecret = Named(
  'ClientWithSecret',
  Type.Object({
    ...Client.properties,
    secret: Type.Optional(
      Type.String({
        description:
          'The client secret, shown only in this response; the service keeps only a hash of it. Absent when a client is registered with keys (it authenticates with them alone)',
      }),
    ),
  }),
)
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
