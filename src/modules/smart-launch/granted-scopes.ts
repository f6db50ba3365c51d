import { type FhirScopeRules, grantableScopes } from '../../access/grantable-scopes.js'
import { parseSmartScope, type SmartScope } from '../../access/smart-scopes.js'

// What an app is granted: what it asked for and may be granted (its registration), as far as the
// user's roles allow, once the user consents; and how the consent page says it in plain words.

/** Scopes that name no resources: who the user is, the launch context, and how long access lasts. */
const CONTEXT_SCOPES = [
  'openid',
  'fhirUser',
  'profile',
  'launch',
  'launch/patient',
  'launch/encounter',
  'online_access',
  'offline_access',
] as const

const isContextScope = (scope: string) => (CONTEXT_SCOPES as readonly string[]).includes(scope)

/**
 * The scopes a user may grant of those asked: context scopes as asked; resource scopes of the
 * `patient/` and `user/` levels as far as the user's roles allow them (a `*` type narrowed to the
 * types they allow, as Backend Services grants are). A scope that does not parse is dropped: it
 * never widens access.
 */
export function grantableByUser(
  asked: readonly string[],
  authorities: ReadonlySet<string>,
  fhir: FhirScopeRules,
): string[] {
  const granted = asked.flatMap((scope) => {
    if (isContextScope(scope)) return [scope]
    const parsed = parseSmartScope(scope)
    if (!parsed || parsed.level === 'system') return []
    return grantableScopes(scope, authorities, fhir, parsed.level)
  })
  return [...new Set(granted)]
}

const CONTEXT_WORDS: Record<(typeof CONTEXT_SCOPES)[number], string> = {
  openid: 'Know who you are (your name and account)',
  fhirUser: 'Know your record in the practice (as a practitioner or a patient)',
  profile: 'See your name and email address',
  launch: 'Open in the patient context the practice’s system chose',
  'launch/patient': 'Know which patient is selected',
  'launch/encounter': 'Know which visit is selected',
  online_access: 'Keep access while you stay signed in here',
  offline_access: 'Keep access when you are away, until you revoke it',
}

const verbs = (scope: SmartScope) =>
  (
    [
      ['read', 'read'],
      ['search', 'search'],
      ['create', 'create'],
      ['update', 'change'],
      ['delete', 'delete'],
    ] as const
  )
    .filter(([interaction]) => scope[interaction])
    .map(([, verb]) => verb)

const listed = (words: string[]) =>
  words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`

/** What a scope lets the app do, in plain words. */
export function scopeInWords(scope: string): string {
  if (isContextScope(scope)) return CONTEXT_WORDS[scope as (typeof CONTEXT_SCOPES)[number]]
  const parsed = parseSmartScope(scope)
  if (!parsed) return scope
  const what = parsed.type === '*' ? 'every kind of record' : `${parsed.type} records`
  const whose =
    parsed.level === 'patient'
      ? 'of the selected patient'
      : parsed.level === 'user'
        ? 'that you may see'
        : 'of the practice'
  const category = parsed.category ? ` (category ${parsed.category})` : ''
  const action = listed(verbs(parsed))
  return `${action.charAt(0).toUpperCase()}${action.slice(1)} ${what}${category} ${whose}`
}
