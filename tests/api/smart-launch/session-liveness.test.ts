import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, type TestOrganization, type TestUser } from '../../helpers/factories.js'
import {
  AUTHORIZE_PATH,
  authorizationQuery,
  Browser,
  codeOf,
  consent,
  PUBLIC_URL,
  pkcePair,
  REDIRECT_URI,
  signIn,
  TOKEN_PATH,
} from '../../helpers/smart-launch.js'
import { type CreatedApp, registeredApp } from '../smart-apps/smart-apps.js'

// When an app's session stops being live, its refresh token is refused by a refresh and reported
// inactive by introspection alike: one rule (sessionIsLive) for both, pinned here case by case.

let app: App
let org: TestOrganization
let admin: TestUser
let client: CreatedApp

// online_access: the session lasts as long as the sign-in on the pages it was authorized in.
const SCOPE = 'openid online_access user/Patient.rs'

beforeAll(async () => {
  app = await buildTestApp({ PUBLIC_URL })
  org = await newOrganization(app)
  admin = await org.user('ADMIN')
  client = await registeredApp(app, admin, {
    name: 'Chart Viewer',
    type: 'confidential',
    redirectUris: [REDIRECT_URI],
    scopes: SCOPE.split(' '),
  })
})
afterAll(async () => {
  await app.close()
})

const form = (path: string, fields: Record<string, string>) =>
  app.inject({
    method: 'POST',
    url: `${TOKEN_PATH.replace(/\/token$/, '')}/${path}`,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
    },
    payload: new URLSearchParams(fields).toString(),
  })

/** A session of the app for a new user: its id and refresh token. */
async function newSession(user: TestUser) {
  const browser = new Browser(app)
  const { verifier, challenge } = pkcePair()
  const page = await browser.request(
    'GET',
    `${AUTHORIZE_PATH}?${authorizationQuery(client.clientId, challenge, { scope: SCOPE })}`,
  )
  const back = await consent(browser, (await signIn(browser, page.body, user)).body, 'approve')
  expect(back.statusCode, back.body).toBe(303)
  const tokens = await form('token', {
    grant_type: 'authorization_code',
    code: codeOf(back.headers.location).code as string,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
  })
  expect(tokens.statusCode, tokens.body).toBe(200)
  return { sessionId: tokens.json().session_state as string, refreshToken: tokens.json().refresh_token }
}

const introspected = async (token: string) => (await form('token/introspect', { token })).json()
const refreshed = (token: string) => form('token', { grant_type: 'refresh_token', refresh_token: token })

const past = sql<Date>`now() - interval '1 second'`
const sessionOf = async (sessionId: string) =>
  app.db
    .selectFrom('sessions')
    .select(['user_id', 'browser_session_id'])
    .where('id', '=', sessionId)
    .executeTakeFirstOrThrow()

const endings: [string, (sessionId: string) => Promise<unknown>][] = [
  [
    'the session was ended',
    (id) => app.db.updateTable('sessions').set({ revoked_at: sql`now()` }).where('id', '=', id).execute(),
  ],
  [
    'the session is past its longest life',
    (id) => app.db.updateTable('sessions').set({ expires_at: past }).where('id', '=', id).execute(),
  ],
  [
    'the account was deactivated',
    async (id) => {
      const { user_id } = await sessionOf(id)
      await app.db.updateTable('users').set({ active: false }).where('id', '=', user_id).execute()
    },
  ],
  [
    'the sign-in it was authorized in was ended',
    async (id) => {
      const { browser_session_id } = await sessionOf(id)
      await app.db
        .updateTable('browser_sessions')
        .set({ revoked_at: sql`now()` })
        .where('id', '=', browser_session_id as string)
        .execute()
    },
  ],
  [
    'the sign-in it was authorized in expired',
    async (id) => {
      const { browser_session_id } = await sessionOf(id)
      await app.db
        .updateTable('browser_sessions')
        .set({ expires_at: past })
        .where('id', '=', browser_session_id as string)
        .execute()
    },
  ],
]

describe('a refresh token whose session stops being live', () => {
  it.each(endings)('is inactive and refused when %s', async (_case, end) => {
    const { sessionId, refreshToken } = await newSession(await org.user('PROVIDER'))
    expect((await sessionOf(sessionId)).browser_session_id).toEqual(expect.any(String))
    expect(await introspected(refreshToken)).toMatchObject({ active: true, sid: sessionId })
    await end(sessionId)
    expect(await introspected(refreshToken)).toEqual({ active: false })
    const refused = await refreshed(refreshToken)
    expect(refused.statusCode).toBe(400)
    expect(refused.json().error).toBe('invalid_grant')
  })

  it('stays active and refreshable while nothing of it has ended', async () => {
    const { refreshToken } = await newSession(await org.user('PROVIDER'))
    expect(await introspected(refreshToken)).toMatchObject({ active: true })
    const again = await refreshed(refreshToken)
    expect(again.statusCode, again.body).toBe(200)
    expect(await introspected(again.json().refresh_token)).toMatchObject({ active: true })
  })
})
