import { Type } from '@sinclair/typebox'
import { Named } from './common.js'

// The authorization endpoint (SMART App Launch) and its pages: what they take and answer, for the
// OpenAPI document. Its parameters are checked by the endpoint itself, not by the schema: any
// error is a page, or a redirect to the app (RFC 6749 §4.1.2.1), never a JSON error.

const Parameter = (description: string) => Type.Optional(Type.String({ description }))

const EXAMPLE = {
  response_type: 'code',
  client_id: 'app-3f6c2a9e0b1d4c5e8f7a6b5c4d3e2f1a',
  redirect_uri: 'https://app.example.com/callback',
  scope: 'openid fhirUser launch/patient patient/Observation.rs offline_access',
  state: 'af0ifjsldkj',
  aud: 'https://ehr.example.com/fhir/R4',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  code_challenge_method: 'S256',
}

const authorizationParameters = {
  response_type: Parameter('`code`, the only one supported'),
  client_id: Parameter('The SMART app’s client id'),
  redirect_uri: Parameter(
    'One of the app’s registered redirect URIs, exactly (a loopback `http` one with any port)',
  ),
  scope: Parameter(
    'SMART scopes (v1 and v2, `patient/` and `user/`), `launch`, `launch/patient`, `openid`, `fhirUser`, `profile`, `online_access`, `offline_access`; those the app may not be granted are left out',
  ),
  state: Parameter('Returned unchanged'),
  aud: Parameter('This server’s FHIR base URL'),
  code_challenge: Parameter('PKCE: the base64url SHA-256 of the code verifier (required)'),
  code_challenge_method: Parameter('`S256` (required; `plain` is refused)'),
  nonce: Parameter('Returned in the ID token'),
  launch: Parameter('The opaque value of an EHR launch, with the `launch` scope'),
}

/** The authorization request (RFC 6749 §4.1.1, RFC 7636, SMART App Launch). */
export const AuthorizationRequest = Named(
  'AuthorizationRequest',
  Type.Object(authorizationParameters, { additionalProperties: true, examples: [EXAMPLE] }),
)

/** A form of the pages: the authorization request's parameters again, with the form's own fields. */
const pageForm = (title: string, fields: Record<string, string>, example: Record<string, string>) =>
  Named(
    title,
    Type.Object(
      {
        ...authorizationParameters,
        csrf: Parameter('The form’s CSRF token, as the page gave it'),
        ...Object.fromEntries(
          Object.entries(fields).map(([name, description]) => [name, Parameter(description)]),
        ),
      },
      { additionalProperties: true, examples: [{ ...EXAMPLE, csrf: '<from the page>', ...example }] },
    ),
  )

export const SignInForm = pageForm(
  'SignInForm',
  { username: 'The account’s email', password: 'Its password' },
  { username: 'nurse@example.com', password: '<password>' },
)
export const PasswordChangeForm = pageForm(
  'PasswordChangeForm',
  {
    username: 'The account’s email',
    currentPassword: 'The temporary password',
    newPassword: 'The password chosen',
  },
  { username: 'nurse@example.com', currentPassword: '<temporary>', newPassword: '<new password>' },
)
export const ConsentForm = pageForm(
  'ConsentForm',
  { decision: '`approve` or `deny`' },
  { decision: 'approve' },
)

export const PatientPickerForm = pageForm(
  'PatientPickerForm',
  {
    name: 'A search: words beginning the patient’s names (as `q` of `GET /api/patients/search`)',
    birthDate: 'A search: the patient’s birth date, `YYYY-MM-DD`',
    mrn: 'A search: the patient’s MRN, exactly',
    patient: 'The choice: the id of a patient the search listed (with it, the search fields are ignored)',
  },
  { name: 'kowal ol', birthDate: '1980-04-02' },
)

export const htmlPage = (description: string) => ({
  description,
  content: { 'text/html': { schema: { type: 'string' } } },
})

/** Back to the app: no body, `Location` its redirect URI with the answer. */
export const RedirectToApp = {
  type: 'null',
  description:
    'Back to the app: its redirect URI with `code`, `state` and `iss`, or with `error` (`invalid_request`, `unsupported_response_type`, `invalid_scope`, `access_denied`) and `error_description`',
  headers: { Location: { type: 'string', description: 'The app’s redirect URI with the answer' } },
}
