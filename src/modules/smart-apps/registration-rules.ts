import { parseSmartScope } from '../../access/smart-scopes.js'
import type { FieldProblems } from '../../errors.js'

/** The scopes besides resource scopes that the embedded issuer understands for an app (SMART App Launch 2.x). */
const APP_SCOPES: ReadonlySet<string> = new Set([
  'launch',
  'launch/patient',
  'launch/encounter',
  'openid',
  'fhirUser',
  'profile',
  'online_access',
  'offline_access',
])

// RFC 8252 §7.3: a native app receives its redirect on a loopback address over http. `localhost`
// is allowed too (§8.3 prefers the address literals), as development servers answer there.
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '[::1]', 'localhost'])

/** Why an app's URL (a redirect URI, its launch URL) cannot be registered, or undefined when it can. */
function urlProblem(value: string): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'must be an absolute URL'
  }
  // RFC 6749 §3.1.2: a redirection endpoint has no fragment. `#` alone parses to an empty hash.
  if (value.includes('#')) return 'must not have a fragment'
  if (url.username !== '' || url.password !== '') return 'must not carry user info'
  if (url.protocol === 'https:') return undefined
  if (url.protocol === 'http:') {
    return LOOPBACK_HOSTS.has(url.hostname)
      ? undefined
      : 'must use https (http only on a loopback host: 127.0.0.1, [::1] or localhost)'
  }
  return 'must use https (http only on a loopback host: 127.0.0.1, [::1] or localhost)'
}

/** The problems of an app's URLs, each at its field. */
export function urlProblems(body: { redirectUris: string[]; launchUrl?: string | null }): FieldProblems {
  const problems: FieldProblems = []
  body.redirectUris.forEach((uri, index) => {
    const problem = urlProblem(uri)
    if (problem) problems.push({ path: `redirectUris.${index}`, message: problem })
  })
  if (body.launchUrl) {
    const problem = urlProblem(body.launchUrl)
    if (problem) problems.push({ path: 'launchUrl', message: problem })
  }
  return problems
}

/** Why a scope cannot be one of an app's, or undefined when it can. */
function scopeProblem(scope: string, resourceTypes: ReadonlySet<string>): string | undefined {
  if (APP_SCOPES.has(scope)) return undefined
  const parsed = parseSmartScope(scope)
  if (!parsed) return `${scope} is not a scope this service grants`
  // system/ scopes are granted to backend services (client_credentials), never through a user.
  if (parsed.level === 'system') return `${scope}: system/ scopes are for backend services, not apps`
  if (parsed.type !== '*' && !resourceTypes.has(parsed.type)) {
    return `${scope}: the FHIR interface serves no ${parsed.type}`
  }
  return undefined
}

/** The problems of an app's scopes, each at its index. */
export function scopeProblems(scopes: string[], resourceTypes: ReadonlySet<string>): FieldProblems {
  return scopes.flatMap((scope, index) => {
    const problem = scopeProblem(scope, resourceTypes)
    return problem ? [{ path: `scopes.${index}`, message: problem }] : []
  })
}
