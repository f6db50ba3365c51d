import { type Static, Type } from '@sinclair/typebox'
import { Jwks } from './clients.js'
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

const strict = { additionalProperties: false } as const

const SMART_APP_TYPES = ['public', 'confidential'] as const
const SmartAppType = StringEnum(SMART_APP_TYPES, {
  description:
    '`public`: a browser or native app that keeps no secret (PKCE alone); `confidential`: an app with a server side, which authenticates at the token endpoint with a secret, or with a JWT signed by its private key when registered with public keys (`private_key_jwt`)',
})

const urlRules =
  'An absolute URL without a fragment or user info: `https:` on any host, or `http:` only on a loopback host (`127.0.0.1`, `[::1]`, `localhost`) for native and development apps (RFC 8252).'

const AppUrl = (description: string, example: string) =>
  Type.String({
    format: 'uri',
    minLength: 1,
    maxLength: 2048,
    description: `${description}. ${urlRules}`,
    examples: [example],
  })

const RedirectUris = Type.Array(
  AppUrl(
    'Where the authorization endpoint may send the user back, matched exactly',
    'https://app.example.com/callback',
  ),
  {
    minItems: 1,
    maxItems: 20,
    uniqueItems: true,
  },
)

const Scope = Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' })

const Scopes = Type.Array(Scope, {
  minItems: 1,
  maxItems: 100,
  uniqueItems: true,
  description:
    'The most the app may be granted (a user grants it at most these): SMART resource scopes at the `patient/` or `user/` level, v1 (`patient/Observation.read`) or v2 (`user/Patient.rs`, `patient/Observation.rs?category=…`) — never `system/`, which is for backend services — and `launch`, `launch/patient`, `launch/encounter`, `openid`, `fhirUser`, `profile`, `online_access`, `offline_access`',
  examples: [
    ['launch', 'openid', 'fhirUser', 'patient/Patient.rs', 'patient/Observation.rs', 'offline_access'],
  ],
})

const LaunchUrl = AppUrl(
  'Where the EHR opens the app for an EHR launch, with `iss` and `launch` added',
  'https://app.example.com/launch',
)

const JwksUrl = Type.String({
  format: 'uri',
  maxLength: 2048,
  description:
    'A confidential app: an `https://` address where it publishes its public keys (a JWKS), under the same rules as a client’s: hosts on public addresses only, checked at registration and at every fetch; fetched when needed and cached for 5 minutes',
  examples: ['https://careplans.example.com/.well-known/jwks.json'],
})

const appProperties = {
  name: Text(200, {
    description: 'The app’s name, as users see it when asked to grant it access',
    examples: ['Growth charts'],
  }),
  redirectUris: RedirectUris,
  scopes: Scopes,
  launchUrl: Type.Optional(LaunchUrl),
  jwks: Type.Optional(Jwks),
  jwksUrl: Type.Optional(JwksUrl),
}

export const CreateSmartAppBody = Named(
  'SmartAppCreate',
  Type.Object(
    { ...appProperties, type: SmartAppType },
    {
      ...strict,
      description:
        'A SMART app of the caller’s organization (SMART App Launch, authorization code with PKCE). Its `clientId` is generated. A confidential app registered without `jwks` or `jwksUrl` gets a secret, shown only in this response. One registered with `jwks` or `jwksUrl` (not both) gets no secret: it authenticates at the token endpoint with a JWT signed by its private key (`private_key_jwt`, SMART’s client-confidential-asymmetric: RS384 or ES384; `iss` and `sub` its client id, `aud` the token endpoint’s URL, `exp` at most 5 minutes ahead, a `jti` used once). A public app has no secret and no keys.',
      examples: [
        {
          name: 'Growth charts',
          type: 'public',
          redirectUris: ['https://charts.example.com/callback'],
          scopes: ['launch', 'openid', 'fhirUser', 'patient/Patient.rs', 'patient/Observation.rs'],
          launchUrl: 'https://charts.example.com/launch',
        },
        {
          name: 'Care plan review',
          type: 'confidential',
          redirectUris: ['https://careplans.example.com/callback'],
          scopes: ['launch', 'openid', 'fhirUser', 'patient/*.rs', 'offline_access'],
          jwks: {
            keys: [
              {
                kty: 'EC',
                crv: 'P-384',
                kid: 'careplans-2026',
                alg: 'ES384',
                x: 'ZKKdnLdDDlfGqpjbAWVuMIua4EOQfHRqVXZ_iMExMLFQPbckY2IH5DlPzBFE4Ykp',
                y: 'dXABrI4pWo6XpY6OpCQlXBgxqN-9QJGx5JRd7o7KOP2vv5tQvu9w_UsUGwNYvr7I',
              },
            ],
          },
        },
      ],
    },
  ),
)
export type CreateSmartAppBody = Static<typeof CreateSmartAppBody>

/** What a merged patch is checked against: everything but the type, which an app keeps. */
export const UpdateSmartAppBody = Named(
  'SmartAppUpdate',
  Type.Object(appProperties, {
    ...strict,
    description:
      'The name, redirect URIs, scopes, launch URL and keys of an app (its type stays as registered)',
  }),
)
export type UpdateSmartAppBody = Static<typeof UpdateSmartAppBody>

export const PatchSmartAppBody = Named(
  'SmartAppPatch',
  MergePatch(UpdateSmartAppBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the app: only the members sent change; `redirectUris`, `scopes` and `jwks.keys` replace the whole list; `null` removes `launchUrl`, `jwks` or `jwksUrl`. Read-only members (`id`, `clientId`, `type`, `active`, …) are refused. Narrowing `scopes` does not change grants already given; the authorization endpoint grants no more than the app’s scopes.',
    examples: [{ redirectUris: ['https://charts.example.com/callback', 'http://127.0.0.1:8080/callback'] }],
  }),
)
export type PatchSmartAppBody = Static<typeof PatchSmartAppBody>

export const SmartApp = Named(
  'SmartApp',
  Type.Object({
    id: Id,
    clientId: Type.String({ description: 'The OAuth `client_id` the app authorizes with (generated)' }),
    name: Type.String(),
    type: SmartAppType,
    redirectUris: Type.Array(Type.String()),
    scopes: Type.Array(Type.String()),
    launchUrl: Nullable(Type.String({ description: 'Where the EHR opens the app; null when none' })),
    hasSecret: Type.Boolean({
      description:
        'A confidential app that authenticates with a secret; one with keys only authenticates with signed assertions',
    }),
    jwksUrl: Nullable(
      Type.String({ description: 'Where the app publishes its public keys; null when none or stored' }),
    ),
    keys: Type.Array(
      Type.Object({
        kid: Nullable(Type.String({ description: 'The key id; null for a key registered without one' })),
        alg: Type.String(),
      }),
      { description: 'The registered public keys (`jwks`), by id and algorithm; empty when none or by URL' },
    ),
    active: Type.Boolean({
      description: 'A deactivated app is refused at the authorization and token endpoints',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)
export type SmartApp = Static<typeof SmartApp>

export const SmartAppWithSecret = Named(
  'SmartAppWithSecret',
  Type.Object({
    ...SmartApp.properties,
    clientSecret: Type.Optional(
      Type.String({
        description:
          'The client secret of a confidential app, shown only in this response; the service keeps only a hash of it. Absent for public apps and apps registered with keys',
      }),
    ),
  }),
)
export type SmartAppWithSecret = Static<typeof SmartAppWithSecret>

export const SMART_APP_SORT_FIELDS = ['name', 'clientId', 'createdAt', 'updatedAt'] as const
export const SmartAppListQuery = ListQuery(
  SMART_APP_SORT_FIELDS,
  { active: Type.Optional(Type.Boolean()) },
  { sync: false },
)
export type SmartAppListQuery = Static<typeof SmartAppListQuery>

export const AppGrant = Named(
  'AppGrant',
  Type.Object({
    id: Id,
    userId: Id,
    appId: Id,
    appName: Type.String(),
    clientId: Type.String({ description: 'The app’s OAuth `client_id`' }),
    scopes: Type.Array(Type.String(), { description: 'What the user allowed the app' }),
    createdAt: Timestamp,
    revokedAt: Nullable(Timestamp),
  }),
)
export type AppGrant = Static<typeof AppGrant>

export const APP_GRANT_SORT_FIELDS = ['createdAt'] as const
export const MyAppGrantListQuery = ListQuery(APP_GRANT_SORT_FIELDS, {}, { sync: false })
export type MyAppGrantListQuery = Static<typeof MyAppGrantListQuery>
export const AppGrantListQuery = ListQuery(
  APP_GRANT_SORT_FIELDS,
  {
    userId: Type.Optional(Id),
    appId: Type.Optional(Id),
  },
  { sync: false },
)
export type AppGrantListQuery = Static<typeof AppGrantListQuery>

export const CreateSmartLaunchBody = Named(
  'SmartLaunchCreate',
  Type.Object(
    {
      patientId: Id,
      encounterId: Type.Optional(Id),
      appId: Type.Optional(Id),
    },
    {
      ...strict,
      description:
        'The context to open an app in (SMART EHR launch): a patient of the organization, optionally one of their encounters, optionally the app (an active app of the organization; only that app may then redeem the launch)',
      examples: [{ patientId: 42, appId: 7 }],
    },
  ),
)
export type CreateSmartLaunchBody = Static<typeof CreateSmartLaunchBody>

export const SmartLaunch = Named(
  'SmartLaunch',
  Type.Object({
    launch: Type.String({
      description:
        'The opaque `launch` value, shown only here; the app sends it to the authorization endpoint, once',
    }),
    expiresAt: Timestamp,
    launchUrl: Nullable(
      Type.String({
        description:
          'With `appId`, when the app has a launch URL: that URL with `iss` (the FHIR base URL) and `launch` added, to open; null otherwise',
      }),
    ),
  }),
)
export type SmartLaunch = Static<typeof SmartLaunch>

export const SmartAppEnvelope = Envelope(SmartApp)
export const SmartAppWithSecretEnvelope = Envelope(SmartAppWithSecret)
export const SmartAppPageEnvelope = Envelope(Page(SmartApp))
export const AppGrantEnvelope = Envelope(AppGrant)
export const AppGrantPageEnvelope = Envelope(Page(AppGrant))
export const SmartLaunchEnvelope = Envelope(SmartLaunch)
