import type { Db } from '../../../db/database.js'
import { findActiveApp } from '../smart-apps/service.js'

// The authorization request of RFC 6749 §4.1.1 as SMART App Launch profiles it: checked in full
// when the app sends the user here, and again at every step of the pages (its parameters travel
// in their forms).

export type { SmartAppRow as SmartApp } from '../smart-apps/service.js'

import type { SmartAppRow as SmartApp } from '../smart-apps/service.js'

/** The parameters of an authorization request, as a query or a form carries them. */
const AUTHORIZATION_PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'aud',
  'code_challenge',
  'code_challenge_method',
  'nonce',
  'launch',
] as const
export type AuthorizationParameters = Partial<Record<(typeof AUTHORIZATION_PARAMETERS)[number], string>>

export const authorizationParametersOf = (source: unknown): AuthorizationParameters => {
  const values = (source ?? {}) as Record<string, unknown>
  return Object.fromEntries(
    AUTHORIZATION_PARAMETERS.flatMap((name) => {
      const value = values[name]
      return typeof value === 'string' ? [[name, value]] : []
    }),
  )
}

/** A request checked as far as its app and redirect URI: the user may be sent back there. */
export interface AuthorizationRequest {
  app: SmartApp
  redirectUri: string
  state: string | undefined
  /** The scopes asked for that the app may be granted, in the order asked. */
  scopes: string[]
  codeChallenge: string
  nonce: string | undefined
  /** An EHR launch's opaque value, with the `launch` scope. */
  launch: string | undefined
  parameters: AuthorizationParameters
}

/**
 * A request that cannot be answered at the app's redirect URI (no app, or a redirect URI not
 * registered): shown to the user, never redirected (RFC 6749 §4.1.2.1).
 */
export class UnredirectableError extends Error {
  constructor(readonly title: string) {
    super(title)
  }
}

/** An error answered at the app's redirect URI, with the request's state. */
export class RedirectedError extends Error {
  constructor(
    readonly request: Pick<AuthorizationRequest, 'redirectUri' | 'state'>,
    readonly error: string,
    readonly description: string,
  ) {
    super(description)
  }
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])

/**
 * Whether `sent` is one of the app's registered redirect URIs: the same string, but for a loopback
 * `http` one, whose port may differ (a native app listens on whatever port it gets, RFC 8252 §7.3).
 */
function matchesRegistered(sent: string, registered: readonly string[]): boolean {
  if (registered.includes(sent)) return true
  let url: URL
  try {
    url = new URL(sent)
  } catch {
    return false
  }
  if (url.protocol !== 'http:' || !LOOPBACK_HOSTS.has(url.hostname) || url.hash !== '') return false
  const withoutPort = (value: URL) => {
    const copy = new URL(value.href)
    copy.port = ''
    return copy.href
  }
  return registered.some((uri) => {
    try {
      const candidate = new URL(uri)
      return candidate.protocol === 'http:' && withoutPort(candidate) === withoutPort(url)
    } catch {
      return false
    }
  })
}

// RFC 7636 §4.1: 43 to 128 unreserved characters; S256 gives 43 base64url characters.
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, '')

/** The authorization request, checked; throws UnredirectableError or RedirectedError. */
export async function checkAuthorizationRequest(
  db: Db,
  parameters: AuthorizationParameters,
  fhirBase: string,
): Promise<AuthorizationRequest> {
  const { client_id: clientId, redirect_uri: redirectUri } = parameters
  if (!clientId) throw new UnredirectableError('The app did not say who it is (client_id is missing)')
  const app = await findActiveApp(db, clientId)
  if (!app) throw new UnredirectableError('This app is not registered with the practice, or was deactivated')
  if (!redirectUri)
    throw new UnredirectableError('The app did not say where to return (redirect_uri is missing)')
  if (!matchesRegistered(redirectUri, app.redirect_uris)) {
    throw new UnredirectableError('The app asked to return to an address it did not register')
  }
  const back = { redirectUri, state: parameters.state }
  const refuse = (error: string, description: string) => new RedirectedError(back, error, description)
  if (parameters.response_type !== 'code') {
    throw refuse('unsupported_response_type', 'Only response_type=code is supported')
  }
  if (parameters.code_challenge_method !== 'S256') {
    throw refuse('invalid_request', 'PKCE is required, with code_challenge_method=S256')
  }
  if (!parameters.code_challenge || !CODE_CHALLENGE.test(parameters.code_challenge)) {
    throw refuse('invalid_request', 'code_challenge must be the base64url SHA-256 of the code verifier')
  }
  if (!parameters.aud || withoutTrailingSlash(parameters.aud) !== withoutTrailingSlash(fhirBase)) {
    throw refuse('invalid_request', `aud must be this server's FHIR base URL, ${fhirBase}`)
  }
  const asked = [...new Set((parameters.scope ?? '').split(' ').filter(Boolean))]
  if (parameters.launch !== undefined && !asked.includes('launch')) {
    throw refuse('invalid_scope', 'A launch value needs the launch scope')
  }
  if (parameters.launch === undefined && asked.includes('launch')) {
    throw refuse('invalid_request', 'The launch scope needs the launch value the EHR gave the app')
  }
  const scopes = asked.filter((scope) => app.scopes.includes(scope))
  if (scopes.length === 0)
    throw refuse('invalid_scope', 'None of the scopes asked for may be granted to this app')
  return {
    app,
    redirectUri,
    state: parameters.state,
    scopes,
    codeChallenge: parameters.code_challenge,
    nonce: parameters.nonce,
    launch: parameters.launch,
    parameters,
  }
}

/** Where the user goes back to the app: its redirect URI with the answer's parameters. */
export function redirectTo(
  request: Pick<AuthorizationRequest, 'redirectUri' | 'state'>,
  answer: Record<string, string>,
  issuer: string,
): string {
  const url = new URL(request.redirectUri)
  for (const [name, value] of Object.entries(answer)) url.searchParams.set(name, value)
  if (request.state !== undefined) url.searchParams.set('state', request.state)
  // RFC 9207: the issuer of the answer, against mix-up attacks.
  url.searchParams.set('iss', issuer)
  return url.href
}
