import { type Static, Type } from '@sinclair/typebox'
import { Named } from './common.js'

const FormField = (description: string) => Type.Optional(Type.String({ maxLength: 4096, description }))

/** RFC 7523 client authentication (`private_key_jwt`), wherever a confidential client authenticates. */
const clientAssertionFields = (endpoint: string) => ({
  client_assertion_type: FormField(
    'With client_assertion: `urn:ietf:params:oauth:client-assertion-type:jwt-bearer` (RFC 7523)',
  ),
  client_assertion: Type.Optional(
    Type.String({
      maxLength: 8192,
      description: `A confidential client or SMART app with registered keys authenticates ${endpoint} with a JWT signed by its private key instead of a secret (\`private_key_jwt\`: SMART Backend Services, and SMART’s client-confidential-asymmetric apps): RS384 or ES384; \`iss\` and \`sub\` its client id, \`aud\` the token endpoint’s URL (or the issuer’s), \`exp\` at most 5 minutes ahead, a \`jti\` never used before`,
    }),
  ),
})

/**
 * The token endpoint's form (application/x-www-form-urlencoded). Parameters this issuer does not use
 * are accepted and ignored, as OAuth requires.
 */
export const TokenRequest = Named(
  'TokenRequest',
  Type.Object(
    {
      grant_type: Type.String({
        description: 'authorization_code, password, client_credentials or refresh_token',
      }),
      code: FormField(
        'authorization_code grant: the code the authorization endpoint gave the app (single use, 60 s)',
      ),
      redirect_uri: FormField(
        'authorization_code grant: the redirect URI of the authorization request, exactly',
      ),
      code_verifier: FormField(
        'authorization_code grant: the PKCE verifier whose S256 hash was the code_challenge',
      ),
      client_id: FormField('The client; may instead come in HTTP Basic authentication'),
      client_secret: FormField('Secret of a confidential client'),
      ...clientAssertionFields('here'),
      username: FormField('password grant: the account e-mail'),
      password: FormField('password grant'),
      refresh_token: FormField(
        'refresh_token grant; the public client may leave out client_id (only a refresh token of its own is accepted then)',
      ),
      scope: FormField(
        'password grant: `online_access` or `offline_access` (SMART) are granted when asked for. client_credentials grant: SMART Backend Services scopes (`system/Patient.rs`, `system/*.read`, `system/Observation.rs?category=laboratory`, …) that narrow the token on the FHIR interface; only read and search scopes of the types served that the client’s roles allow are granted, the rest are left out (invalid_scope when none is left). `openid profile email` are always granted; the answer’s `scope` says what was',
      ),
    },
    {
      examples: [
        {
          grant_type: 'password',
          client_id: 'ehr-api',
          username: 'admin@example.com',
          password: '<password>',
        },
        { grant_type: 'client_credentials', client_id: 'billing-sync', client_secret: '<secret>' },
        {
          grant_type: 'authorization_code',
          code: '<code from the redirect>',
          redirect_uri: 'https://careplans.example.com/callback',
          code_verifier: '<PKCE verifier>',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: '<JWT signed with the app’s private key>',
        },
        {
          grant_type: 'client_credentials',
          scope: 'system/*.read',
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: '<JWT signed with the client’s private key>',
        },
      ],
    },
  ),
)
export type TokenRequest = Static<typeof TokenRequest>

export const LogoutRequest = Named(
  'OidcLogoutRequest',
  Type.Object(
    {
      client_id: FormField('The client the session belongs to'),
      client_secret: FormField('Secret of a confidential client'),
      refresh_token: Type.String({ minLength: 1, maxLength: 4096 }),
    },
    { examples: [{ client_id: 'ehr-api', refresh_token: '<refresh token>' }] },
  ),
)
export type LogoutRequest = Static<typeof LogoutRequest>

/** The token set, field for field as a Keycloak realm returns it. */
export const TokenSet = Named(
  'TokenSet',
  Type.Object({
    access_token: Type.String(),
    expires_in: Type.Integer({ description: '3600' }),
    refresh_expires_in: Type.Integer({
      description: '86400; 0 when no refresh token is issued (client_credentials)',
    }),
    refresh_token: Type.Optional(Type.String()),
    token_type: Type.Literal('Bearer'),
    'not-before-policy': Type.Integer(),
    session_state: Type.String(),
    scope: Type.String(),
    id_token: Type.Optional(
      Type.String({ description: 'With `openid` granted to a SMART app: who signed in (RS256, `fhirUser`)' }),
    ),
    patient: Type.Optional(Type.String({ description: 'SMART launch context: the patient’s id' })),
    encounter: Type.Optional(Type.String({ description: 'SMART launch context: the encounter’s id' })),
    need_patient_banner: Type.Optional(
      Type.Boolean({ description: 'SMART: whether the app must show which patient it is about' }),
    ),
  }),
)
export type TokenSet = Static<typeof TokenSet>

export const OAuthErrorBody = Named(
  'OAuthError',
  Type.Object(
    {
      error: Type.String({
        description:
          'invalid_request, invalid_client, invalid_grant, invalid_scope, unauthorized_client, unsupported_grant_type, invalid_token (UserInfo), slow_down, server_error, temporarily_unavailable',
      }),
      error_description: Type.String(),
    },
    { description: 'OAuth 2.0 error' },
  ),
)
export type OAuthErrorBody = Static<typeof OAuthErrorBody>

export const JsonWebKeySet = Named(
  'JsonWebKeySet',
  Type.Object({
    keys: Type.Array(
      Type.Object({
        kid: Type.String(),
        kty: Type.String(),
        alg: Type.String(),
        use: Type.String(),
        n: Type.String(),
        e: Type.String(),
      }),
    ),
  }),
)

export const DiscoveryDocument = Named(
  'OpenIdConfiguration',
  Type.Object({
    issuer: Type.String(),
    authorization_endpoint: Type.String(),
    token_endpoint: Type.String(),
    userinfo_endpoint: Type.String(),
    introspection_endpoint: Type.String(),
    revocation_endpoint: Type.String(),
    end_session_endpoint: Type.String(),
    jwks_uri: Type.String(),
    grant_types_supported: Type.Array(Type.String()),
    response_types_supported: Type.Array(Type.String()),
    code_challenge_methods_supported: Type.Array(Type.String()),
    subject_types_supported: Type.Array(Type.String()),
    id_token_signing_alg_values_supported: Type.Array(Type.String()),
    token_endpoint_auth_methods_supported: Type.Array(Type.String()),
    token_endpoint_auth_signing_alg_values_supported: Type.Array(Type.String()),
    introspection_endpoint_auth_methods_supported: Type.Array(Type.String()),
    introspection_endpoint_auth_signing_alg_values_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
    revocation_endpoint_auth_signing_alg_values_supported: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    claims_supported: Type.Array(Type.String()),
  }),
)

const TokenField = Type.String({ minLength: 1, maxLength: 8192, description: 'The token' })
const TokenTypeHint = Type.Optional(
  Type.String({
    maxLength: 64,
    description:
      '`access_token` or `refresh_token`: where to look first; a token of the other kind is still found (RFC 7009 §2.1, RFC 7662 §2.1)',
  }),
)

/** RFC 7662 §2.1: the introspection request's form. */
export const IntrospectionRequest = Named(
  'IntrospectionRequest',
  Type.Object(
    {
      token: TokenField,
      token_type_hint: TokenTypeHint,
      client_id: FormField('The calling confidential client; may instead come in HTTP Basic authentication'),
      client_secret: FormField('Its secret'),
      ...clientAssertionFields('here as at the token endpoint'),
    },
    { examples: [{ token: '<access or refresh token>', token_type_hint: 'access_token' }] },
  ),
)
export type IntrospectionRequest = Static<typeof IntrospectionRequest>

/** RFC 7662 §2.2: whether a token is active and, when it is, what it says. */
export const Introspection = Named(
  'TokenIntrospection',
  Type.Object(
    {
      active: Type.Boolean({
        description:
          'false for a token that is invalid, expired, revoked (its session ended), unknown or of another organization; nothing else is said then',
      }),
      scope: Type.Optional(Type.String()),
      client_id: Type.Optional(Type.String({ description: 'The client the token was issued to (azp)' })),
      username: Type.Optional(Type.String({ description: 'The account e-mail' })),
      token_type: Type.Optional(
        Type.String({ description: '`Bearer` (an access token) or `refresh_token`' }),
      ),
      exp: Type.Optional(Type.Integer()),
      iat: Type.Optional(Type.Integer()),
      sub: Type.Optional(Type.String()),
      aud: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
      iss: Type.Optional(Type.String()),
      sid: Type.Optional(Type.String({ description: 'The session the token belongs to' })),
      patient: Type.Optional(Type.String({ description: 'SMART launch context: the patient (id)' })),
      fhirUser: Type.Optional(
        Type.String({ description: 'SMART: the user as a FHIR resource, relative to the FHIR base' }),
      ),
    },
    {
      examples: [
        { active: false },
        {
          active: true,
          token_type: 'Bearer',
          scope: 'openid profile email',
          client_id: 'ehr-api',
          username: 'nurse@example.com',
          sub: '3f1c…',
          exp: 1764300000,
          iat: 1764296400,
        },
      ],
    },
  ),
)
export type Introspection = Static<typeof Introspection>

/** RFC 7009 §2.1: the revocation request's form. */
export const RevocationRequest = Named(
  'RevocationRequest',
  Type.Object(
    {
      token: TokenField,
      token_type_hint: TokenTypeHint,
      client_id: FormField(
        'The client the token was issued to; may instead come in HTTP Basic authentication',
      ),
      client_secret: FormField('Secret of a confidential client'),
      ...clientAssertionFields('here as at the token endpoint'),
    },
    { examples: [{ client_id: 'ehr-api', token: '<refresh token>', token_type_hint: 'refresh_token' }] },
  ),
)
export type RevocationRequest = Static<typeof RevocationRequest>

/** OpenID Connect Core §5.3.2: the user's claims, and SMART's fhirUser. */
export const UserInfo = Named(
  'UserInfo',
  Type.Object({
    sub: Type.String(),
    name: Type.String(),
    given_name: Type.String(),
    family_name: Type.String(),
    preferred_username: Type.String(),
    email: Type.String(),
    email_verified: Type.Boolean(),
    fhirUser: Type.Optional(
      Type.String({
        description:
          'The user as a FHIR resource, relative to the FHIR base: `Practitioner/{id}` for a provider’s account, `Patient/{id}` for a patient’s own',
      }),
    ),
  }),
)
export type UserInfo = Static<typeof UserInfo>
