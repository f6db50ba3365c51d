import { createHash, randomBytes } from 'node:crypto'
import type { App } from '../../src/app.js'
import { TEST_PASSWORD, type TestOrganization, type TestUser } from './factories.js'

// Driving SMART App Launch's authorization endpoint in process: a registered app, a browser's
// cookies, the pages' forms, and the code's exchange.

export const PUBLIC_URL = 'http://127.0.0.1:8080'
export const ISSUER = `${PUBLIC_URL}/realms/ehr`
export const FHIR_BASE = `${PUBLIC_URL}/fhir/R4`
export const AUTHORIZE_PATH = '/realms/ehr/protocol/openid-connect/auth'
export const TOKEN_PATH = '/realms/ehr/protocol/openid-connect/token'
export const REDIRECT_URI = 'https://app.example.test/callback'

export interface RegisteredApp {
  id: number
  clientId: string
}

/** A public SMART app of the organization, registered in the database directly. */
export async function registerApp(
  app: App,
  org: TestOrganization,
  admin: TestUser,
  { scopes, redirectUris = [REDIRECT_URI] }: { scopes: string[]; redirectUris?: string[] },
): Promise<RegisteredApp> {
  const clientId = `app-${randomBytes(6).toString('hex')}`
  const row = await app.db
    .insertInto('smart_apps')
    .values({
      organization_id: org.id,
      client_id: clientId,
      name: 'Chart Viewer',
      confidential: false,
      secret_hash: null,
      jwks: null,
      jwks_url: null,
      redirect_uris: redirectUris,
      scopes,
      launch_url: null,
      created_by: admin.id,
      disabled_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return { id: row.id, clientId }
}

export const pkcePair = () => {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/** A browser: its cookies, kept from one answer to the next, and the address it calls from. */
export class Browser {
  private readonly cookies = new Map<string, string>()

  constructor(
    private readonly app: App,
    private readonly remoteAddress = '127.0.0.1',
  ) {}

  async request(method: 'GET' | 'POST', url: string, form?: Record<string, string>) {
    const response = await this.app.inject({
      method,
      url,
      remoteAddress: this.remoteAddress,
      headers: {
        ...(this.cookies.size > 0
          ? { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
          : {}),
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(form ? { payload: new URLSearchParams(form).toString() } : {}),
    })
    const set = response.headers['set-cookie']
    for (const line of set === undefined ? [] : Array.isArray(set) ? set : [set]) {
      const [pair = ''] = line.split(';')
      const separator = pair.indexOf('=')
      this.cookies.set(pair.slice(0, separator), pair.slice(separator + 1))
    }
    return response
  }
}

/** The hidden fields of a page's form, and where it posts. */
export function formOf(page: string): { action: string; fields: Record<string, string> } {
  const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1]
  if (!action) throw new Error(`No form in the page: ${page.slice(0, 500)}`)
  const fields: Record<string, string> = {}
  for (const match of page.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1] as string] = (match[2] as string).replaceAll('&amp;', '&').replaceAll('&quot;', '"')
  }
  return { action, fields }
}

/** An authorization request's query, as an app builds it. */
export function authorizationQuery(
  clientId: string,
  challenge: string,
  overrides: Record<string, string | undefined> = {},
): string {
  const parameters = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'openid fhirUser user/Patient.rs',
    state: 'state-123',
    aud: FHIR_BASE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...overrides,
  }
  const defined = Object.entries(parameters).filter(
    (entry): entry is [string, string] => entry[1] !== undefined,
  )
  return new URLSearchParams(defined).toString()
}

/** Signs `user` in on the page an authorization request showed; the next page or redirect. */
export async function signIn(browser: Browser, signInPage: string, user: TestUser, password = TEST_PASSWORD) {
  const { action, fields } = formOf(signInPage)
  return browser.request('POST', action, { ...fields, username: user.email, password })
}

/** Answers the consent page; the redirect to the app. */
export async function consent(browser: Browser, consentPage: string, decision: 'approve' | 'deny') {
  const { action, fields } = formOf(consentPage)
  return browser.request('POST', action, { ...fields, decision })
}

/** The code and state of the app's redirect URI. */
export function codeOf(location: string | undefined) {
  const url = new URL(location ?? '')
  return { code: url.searchParams.get('code'), state: url.searchParams.get('state'), url }
}
