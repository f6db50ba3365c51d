import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, type TestUser } from '../../helpers/factories.js'
import {
  AUTHORIZE_PATH,
  authorizationQuery,
  Browser,
  codeOf,
  consent,
  PUBLIC_URL,
  pkcePair,
  REDIRECT_URI,
  registerApp,
  signIn,
  TOKEN_PATH,
} from '../../helpers/smart-launch.js'

// What SMART App Launch's pages and code exchange hold against: guessing passwords on the sign-in
// page, a flood of page requests, and a code exchanged twice at once. Each test calls from an
// address of its own (inject's remoteAddress), so that the limits it spends are its alone.

// Small limits, so that reaching them takes a few requests.
const ACCOUNT_LIMIT = 3
const ADDRESS_LIMIT = 5
const ANONYMOUS_LIMIT = 20

let app: App

beforeAll(async () => {
  app = await buildTestApp({
    PUBLIC_URL,
    RATE_LIMIT_SIGN_IN_ACCOUNT: String(ACCOUNT_LIMIT),
    RATE_LIMIT_SIGN_IN_ADDRESS: String(ADDRESS_LIMIT),
    RATE_LIMIT_ANONYMOUS: String(ANONYMOUS_LIMIT),
  })
})
afterAll(async () => {
  await app.close()
})

const SCOPE = 'openid offline_access user/Patient.rs'

async function practice() {
  const org = await newOrganization(app)
  const admin = await org.user('ADMIN')
  const registered = await registerApp(app, org, admin, { scopes: SCOPE.split(' ') })
  return { org, registered }
}

/** The sign-in page of a new authorization request, in a browser at `address`. */
async function signInPage(clientId: string, address: string) {
  const browser = new Browser(app, address)
  const query = authorizationQuery(clientId, pkcePair().challenge, { scope: SCOPE })
  const page = await browser.request('GET', `${AUTHORIZE_PATH}?${query}`)
  expect(page.statusCode, page.body).toBe(200)
  return { browser, page: page.body }
}

describe('POST /realms/{realm}/protocol/openid-connect/auth/sign-in', () => {
  it(`answers 429 after ${ACCOUNT_LIMIT} wrong passwords for an account, and refuses its right password then`, async () => {
    const { org, registered } = await practice()
    const target = await org.user('PROVIDER')
    const colleague = await org.user('PROVIDER')
    const { browser, page } = await signInPage(registered.clientId, '198.51.100.1')
    let current = page
    for (let attempt = 1; attempt <= ACCOUNT_LIMIT; attempt++) {
      const wrong = await signIn(browser, current, target, `wrong-${attempt}`)
      expect(wrong.statusCode, `attempt ${attempt}`).toBe(401)
      current = wrong.body
    }
    const limited = await signIn(browser, current, target, 'wrong-again')
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['content-type']).toMatch(/^text\/html/)
    expect(limited.body).toContain('Too many attempts')
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)

    const right = await signIn(browser, limited.body, target)
    expect(right.statusCode).toBe(429)
    expect(right.headers['set-cookie']).toBeUndefined()
    expect(right.headers.location).toBeUndefined()

    // The limit is the account's: a colleague at the same address signs in.
    const theirs = await signInPage(registered.clientId, '198.51.100.1')
    const consentPage = await signIn(theirs.browser, theirs.page, colleague)
    expect(consentPage.statusCode, consentPage.body).toBe(200)
    expect(consentPage.body).toContain('decision')
  })

  it(`answers 429 to an address after ${ADDRESS_LIMIT} failures across accounts (password spraying)`, async () => {
    const { org, registered } = await practice()
    const address = '198.51.100.2'
    const { browser, page } = await signInPage(registered.clientId, address)
    let current = page
    for (let attempt = 1; attempt <= ADDRESS_LIMIT; attempt++) {
      const wrong = await signIn(browser, current, await org.user('NURSE'), 'sprayed-password')
      expect(wrong.statusCode, `attempt ${attempt}`).toBe(401)
      current = wrong.body
    }
    const untouched = await org.user('PROVIDER')
    const refused = await signIn(browser, current, untouched)
    expect(refused.statusCode).toBe(429)
    expect(refused.headers['set-cookie']).toBeUndefined()

    // Elsewhere the same account signs in.
    const elsewhere = await signInPage(registered.clientId, '198.51.100.3')
    expect((await signIn(elsewhere.browser, elsewhere.page, untouched)).statusCode).toBe(200)
  })
})

describe('GET /realms/{realm}/protocol/openid-connect/auth', () => {
  it(`answers a page with 429, not an error, past ${ANONYMOUS_LIMIT} requests from an address`, async () => {
    const { registered } = await practice()
    const browser = new Browser(app, '198.51.100.4')
    const url = `${AUTHORIZE_PATH}?${authorizationQuery(registered.clientId, pkcePair().challenge)}`
    for (let request = 1; request <= ANONYMOUS_LIMIT; request++) {
      expect((await browser.request('GET', url)).statusCode, `request ${request}`).toBe(200)
    }
    const limited = await browser.request('GET', url)
    expect(limited.statusCode).toBe(429)
    expect(limited.headers['content-type']).toMatch(/^text\/html/)
    expect(limited.body).toContain('Too many requests')
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
  })
})

const exchange = (form: Record<string, string>, remoteAddress: string) =>
  app.inject({
    method: 'POST',
    url: TOKEN_PATH,
    remoteAddress,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  })

/** A new code for the app: sign-in and consent the first time, straight back after. */
async function newCode(browser: Browser, clientId: string, user: TestUser) {
  const { verifier, challenge } = pkcePair()
  const query = authorizationQuery(clientId, challenge, { scope: SCOPE })
  let answer = await browser.request('GET', `${AUTHORIZE_PATH}?${query}`)
  if (answer.statusCode === 200) answer = await signIn(browser, answer.body, user)
  if (answer.statusCode === 200) answer = await consent(browser, answer.body, 'approve')
  expect(answer.statusCode, answer.body).toBe(303)
  return { code: codeOf(answer.headers.location).code as string, verifier }
}

describe('a code exchanged twice at once', () => {
  // Several rounds: on PostgreSQL the two exchanges really overlap, and which wins varies.
  const ROUNDS = 5

  it('lets exactly one exchange through, and the other revokes what that one issued', async () => {
    const { org, registered } = await practice()
    const provider = await org.user('PROVIDER')
    const browser = new Browser(app, '198.51.100.5')
    // The token requests, anonymous calls too, from an address of their own.
    const address = '198.51.100.6'
    for (let round = 1; round <= ROUNDS; round++) {
      const { code, verifier } = await newCode(browser, registered.clientId, provider)
      const form = {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        client_id: registered.clientId,
      }
      const answers = await Promise.all([exchange(form, address), exchange(form, address)])
      expect(answers.map((answer) => answer.statusCode).sort(), `round ${round}`).toEqual([200, 400])
      const issued = answers.find((answer) => answer.statusCode === 200)?.json()
      expect(answers.find((answer) => answer.statusCode === 400)?.json().error).toBe('invalid_grant')

      const session = await app.db
        .selectFrom('sessions')
        .select(['revoked_at', 'revoked_reason'])
        .where('id', '=', issued.session_state)
        .executeTakeFirstOrThrow()
      expect(session.revoked_reason, `round ${round}`).toBe('CODE_REUSE')
      const refresh = await exchange(
        { grant_type: 'refresh_token', refresh_token: issued.refresh_token, client_id: registered.clientId },
        address,
      )
      expect(refresh.statusCode).toBe(400)
    }
  })
})
