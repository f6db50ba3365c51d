import { type Static, Type } from '@sinclair/typebox'
import { Email, Empty, Envelope, ErrorEnvelope, Named } from './common.js'

export const LoginBody = Named(
  'LoginRequest',
  Type.Object(
    {
      username: Type.String({ minLength: 1, maxLength: 254, description: 'The account e-mail address' }),
      password: Type.String({ minLength: 1, maxLength: 1024 }),
    },
    {
      additionalProperties: false,
      examples: [{ username: 'admin@example.com', password: 'correct horse battery staple' }],
    },
  ),
)
export type LoginBody = Static<typeof LoginBody>

const LoginUser = Named(
  'LoginUser',
  Type.Object({
    id: Type.Integer(),
    email: Type.String(),
    firstName: Type.String(),
    lastName: Type.String(),
    role: Type.String({ description: 'The primary (first) role of the user, e.g. PROVIDER' }),
  }),
)

export const LoginResult = Named(
  'LoginResult',
  Type.Object({
    token: Type.String({ description: 'RS256 JWT access token' }),
    refreshToken: Type.String({ description: 'Opaque refresh token, valid 86400 seconds' }),
    expiresIn: Type.Integer({ description: 'Access token lifetime in seconds (3600)' }),
    user: LoginUser,
  }),
)
export type LoginResult = Static<typeof LoginResult>
export const LoginEnvelope = Envelope(LoginResult)

/** Variant A of the specification: the flat, OAuth-style token response. */
export const FlatLoginResponse = Named(
  'FlatLoginResponse',
  Type.Object({
    access_token: Type.String(),
    refresh_token: Type.String(),
    expires_in: Type.Integer({ description: 'Access token lifetime in seconds (3600)' }),
    token_type: Type.Literal('Bearer'),
  }),
)
export type FlatLoginResponse = Static<typeof FlatLoginResponse>

/**
 * The 403 of a sign-in: the error envelope, plus `data` when the password is temporary. The spec's
 * envelope puts `data` on successes only; a refused sign-in is an error (403 AUTH_004, in the error
 * branch of every generated client), and this one `data` member is the machine-readable next step,
 * which a client that ignores it loses nothing by: `error.code` says the same.
 */
export const SignInRefused = Named(
  'SignInRefused',
  Type.Object(
    {
      ...ErrorEnvelope.properties,
      data: Type.Optional(
        Type.Object(
          { requiresPasswordChange: Type.Literal(true) },
          {
            description:
              'With AUTH_004 only: the password is temporary. Call POST /api/auth/change-password with `username`, `currentPassword` and `newPassword` (no token needed), then sign in again',
          },
        ),
      ),
    },
    {
      description:
        'AUTH_004: the password is correct but temporary, so no tokens; `data.requiresPasswordChange` is true. AUTH_003 (external identity provider only): the token’s groups match no organization; no `data`',
      examples: [
        {
          success: false,
          message: 'Password change required',
          error: {
            code: 'AUTH_004',
            details: 'The password is temporary and must be changed before signing in',
          },
          data: { requiresPasswordChange: true },
        },
      ],
    },
  ),
)
export type SignInRefused = Static<typeof SignInRefused>

const RefreshTokenFields = {
  refresh_token: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
  refreshToken: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: 'Same as refresh_token' }),
  ),
}

export const RefreshBody = Named(
  'RefreshRequest',
  Type.Object(RefreshTokenFields, {
    additionalProperties: false,
    description: 'The refresh token, as `refresh_token` or `refreshToken`',
    examples: [{ refresh_token: '<refresh token>' }],
  }),
)
export type RefreshBody = Static<typeof RefreshBody>

export const LogoutBody = Named(
  'LogoutRequest',
  Type.Object(RefreshTokenFields, {
    additionalProperties: false,
    description: 'The refresh token of the session to end, as `refresh_token` or `refreshToken`',
    examples: [{ refresh_token: '<refresh token>' }],
  }),
)
export type LogoutBody = Static<typeof LogoutBody>

export const IdpLoginBody = Named(
  'IdpLoginRequest',
  Type.Object(
    {
      username: Type.Optional(Type.String({ minLength: 1, maxLength: 254 })),
      password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
      code: Type.Optional(
        Type.String({ minLength: 1, maxLength: 4096, description: 'Authorization code from the provider' }),
      ),
      redirectUri: Type.Optional(
        Type.String({
          format: 'uri',
          maxLength: 2048,
          description: 'The redirect URI the code was issued for',
        }),
      ),
      codeVerifier: Type.Optional(
        Type.String({ minLength: 43, maxLength: 128, description: 'PKCE code verifier' }),
      ),
    },
    {
      additionalProperties: false,
      description:
        'Either `username` and `password` (the provider checks them), or `code` and `redirectUri` (+ `codeVerifier` with PKCE)',
      examples: [
        {
          code: '<authorization code>',
          redirectUri: 'https://app.example/callback',
          codeVerifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
        },
      ],
    },
  ),
)
export type IdpLoginBody = Static<typeof IdpLoginBody>

const RefreshResult = Named(
  'RefreshResult',
  Type.Object({
    token: Type.String(),
    refreshToken: Type.String({ description: 'The replacement refresh token; the one sent no longer works' }),
    expiresIn: Type.Integer(),
  }),
)
export const RefreshEnvelope = Envelope(RefreshResult)

export const FlatRefreshResponse = Named(
  'FlatRefreshResponse',
  Type.Object({
    access_token: Type.String(),
    expires_in: Type.Integer(),
    refresh_token: Type.String({
      description: 'The replacement refresh token; the one sent no longer works',
    }),
    token_type: Type.Literal('Bearer'),
  }),
)

export const PASSWORD_MIN_LENGTH = 12
export const PASSWORD_MAX_LENGTH = 1024

const PASSWORD_POLICY = `At least ${PASSWORD_MIN_LENGTH} and at most ${PASSWORD_MAX_LENGTH} characters, not the account e-mail address (in any case), and on a change not the current password. A password breaking a rule is 422 VAL_001 naming newPassword and the rule.`

const NewPassword = Type.String({
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  description: `The new password. ${PASSWORD_POLICY}`,
})

export const ForgotPasswordBody = Named(
  'ForgotPasswordRequest',
  Type.Object(
    { email: Email },
    { additionalProperties: false, examples: [{ email: 'ann.lee@example.com' }] },
  ),
)
export type ForgotPasswordBody = Static<typeof ForgotPasswordBody>

export const ResetPasswordBody = Named(
  'ResetPasswordRequest',
  Type.Object(
    {
      token: Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'The `token` parameter of the link in the reset mail',
      }),
      newPassword: NewPassword,
    },
    {
      additionalProperties: false,
      examples: [{ token: '<token from the mailed link>', newPassword: 'a long and new passphrase' }],
    },
  ),
)
export type ResetPasswordBody = Static<typeof ResetPasswordBody>

export const ChangePasswordBody = Named(
  'ChangePasswordRequest',
  Type.Object(
    {
      username: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 254,
          description:
            'The account e-mail address. Required without a bearer token; with one, it may be left out and must otherwise name the same account',
        }),
      ),
      currentPassword: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }),
      newPassword: NewPassword,
    },
    {
      additionalProperties: false,
      examples: [
        {
          username: 'ann.lee@example.com',
          currentPassword: '<temporary password>',
          newPassword: 'a long and new passphrase',
        },
      ],
    },
  ),
)
export type ChangePasswordBody = Static<typeof ChangePasswordBody>

/** Answer of the password operations: the message says what happened, `data` is empty. */
export const PasswordEnvelope = Envelope(Empty)

export const CurrentUser = Named(
  'CurrentUser',
  Type.Object({
    id: Type.String({ description: 'The user id (the numeric id, as a string)' }),
    email: Type.String(),
    firstName: Type.String(),
    lastName: Type.String(),
    roles: Type.Array(Type.String(), {
      description: 'Realm roles of the access token, e.g. PROVIDER, ADMIN',
    }),
    organizationId: Type.Integer(),
  }),
)
export type CurrentUser = Static<typeof CurrentUser>
export const CurrentUserEnvelope = Envelope(CurrentUser)

/** The claims this service reads from an access token (others are ignored). */
export const AccessTokenClaims = Type.Object({
  iss: Type.String(),
  sub: Type.String(),
  exp: Type.Integer(),
  iat: Type.Integer(),
  aud: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
  azp: Type.Optional(Type.String()),
  typ: Type.Optional(Type.String()),
  realm_access: Type.Optional(Type.Object({ roles: Type.Optional(Type.Array(Type.String())) })),
  groups: Type.Optional(Type.Array(Type.String())),
  email: Type.Optional(Type.String()),
  email_verified: Type.Optional(Type.Boolean()),
  given_name: Type.Optional(Type.String()),
  family_name: Type.Optional(Type.String()),
  preferred_username: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
  /** SMART on FHIR launch context: the patient the token is limited to. */
  patient: Type.Optional(Type.String()),
  /** The session the token belongs to. */
  sid: Type.Optional(Type.String()),
})
export type AccessTokenClaims = Static<typeof AccessTokenClaims>
