import { Type } from '@sinclair/typebox'

// The authorization endpoint (SMART App Launch) and its pages: what they take and answer, for the
// OpenAPI document. Its parameters are checked by the endpoint itself, not by the schema: any
// error is a page, or a redirect to the app (RFC 6749 §4.1.2.1), never a JSON error.

const Parameter = (description: string) => Type.Optional(Type.String({ description }))

/** The authorization request (RFC 6749 §4.1.1, RFC 7636, SMART App Launch). */
export const AuthorizationRequest = Type.Object(
  {
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
  },
  { additionalProperties: true },
)

/** A form of the pages: the authorization request's parameters again, with the form's own fields. */
export const PageForm = (fields: Record<string, string>) =>
  Type.Object(
    {
      ...AuthorizationRequest.properties,
      csrf: Parameter('The form’s CSRF token, as the page gave it'),
      ...Object.fromEntries(
        Object.entries(fields).map(([name, description]) => [name, Parameter(description)]),
      ),
    },
    { additionalProperties: true },
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
