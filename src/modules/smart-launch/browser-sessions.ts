import { createHmac, hkdfSync, randomUUID, timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import { hashToken, newOpaqueToken } from '../../identity/sessions.js'

// A user's sign-in on the service's pages, kept in a cookie, and the CSRF tokens of their forms.

/** How long a sign-in on the pages lasts. */
const BROWSER_SESSION_SECONDS = 8 * 3600
const SESSION_COOKIE = 'ehr_sign_in'
/** Before sign-in: a random value the sign-in form's CSRF token is bound to. */
const FORM_COOKIE = 'ehr_form'

export interface BrowserSession {
  id: string
  userId: number
  organizationId: number
}

/** The cookie values of a request's Cookie header, by name. */
function cookiesOf(request: FastifyRequest): Map<string, string> {
  const cookies = new Map<string, string>()
  for (const pair of (request.headers.cookie ?? '').split(';')) {
    const separator = pair.indexOf('=')
    if (separator < 0) continue
    const name = pair.slice(0, separator).trim()
    if (!cookies.has(name)) cookies.set(name, pair.slice(separator + 1).trim())
  }
  return cookies
}

// A newline cannot occur in a session id, so no two (session, bound value) pairs bind alike.
const sessionBinding = (session: BrowserSession, bound: string | undefined) =>
  bound === undefined ? `session:${session.id}` : `session:${session.id}\n${bound}`

/** The pages' cookies: on their path only, never read by script, sent on the app's return (Lax). */
export function browserCookies(path: string, secure: boolean, formKey: Buffer) {
  const cookie = (name: string, value: string, maxAgeSeconds: number) =>
    [
      `${name}=${value}`,
      `Path=${path}`,
      `Max-Age=${maxAgeSeconds}`,
      'HttpOnly',
      'SameSite=Lax',
      ...(secure ? ['Secure'] : []),
    ].join('; ')
  const addCookie = (reply: FastifyReply, value: string) => {
    const current = reply.getHeader('set-cookie')
    const list = current === undefined ? [] : Array.isArray(current) ? current : [String(current)]
    reply.header('set-cookie', [...list, value])
  }
  const tokenOf = (binding: string) => createHmac('sha256', formKey).update(binding).digest('base64url')

  return {
    /** The signed-in user of the request, if its cookie names a live sign-in of an active account. */
    async sessionOf(db: Db, request: FastifyRequest): Promise<BrowserSession | undefined> {
      const token = cookiesOf(request).get(SESSION_COOKIE)
      if (!token) return undefined
      return db
        .selectFrom('browser_sessions')
        .innerJoin('users', 'users.id', 'browser_sessions.user_id')
        .select(['browser_sessions.id', 'users.id as userId', 'users.organization_id as organizationId'])
        .where('browser_sessions.token_hash', '=', hashToken(token))
        .where('browser_sessions.revoked_at', 'is', null)
        .where('browser_sessions.expires_at', '>', sql<Date>`now()`)
        .where('users.active', '=', true)
        .executeTakeFirst()
    },

    /** Signs the user in on the pages: a new sign-in, its cookie set on the reply. */
    async startSession(db: Db, reply: FastifyReply, userId: number): Promise<string> {
      const id = randomUUID()
      const token = newOpaqueToken()
      await db
        .insertInto('browser_sessions')
        .values({
          id,
          token_hash: hashToken(token),
          user_id: userId,
          expires_at: new Date(Date.now() + BROWSER_SESSION_SECONDS * 1000),
          revoked_at: null,
        })
        .execute()
      addCookie(reply, cookie(SESSION_COOKIE, token, BROWSER_SESSION_SECONDS))
      return id
    },

    /**
     * The CSRF token of a form shown to a signed-in user (bound to their sign-in, and to `bound`,
     * a value the form carries that must come back unchanged), or before sign-in (bound to a
     * random cookie, set now if the request has none).
     */
    formToken(
      request: FastifyRequest,
      reply: FastifyReply,
      session: BrowserSession | undefined,
      bound?: string,
    ): string {
      if (session) return tokenOf(sessionBinding(session, bound))
      let nonce = cookiesOf(request).get(FORM_COOKIE)
      if (!nonce || !/^[A-Za-z0-9_-]{43}$/.test(nonce)) {
        nonce = newOpaqueToken()
        addCookie(reply, cookie(FORM_COOKIE, nonce, BROWSER_SESSION_SECONDS))
      }
      return tokenOf(`form:${nonce}`)
    },

    /** Whether a posted form carries the CSRF token of the form it claims to be, `bound` as given. */
    validFormToken(
      request: FastifyRequest,
      session: BrowserSession | undefined,
      sent: unknown,
      bound?: string,
    ): boolean {
      if (typeof sent !== 'string') return false
      const nonce = cookiesOf(request).get(FORM_COOKIE)
      const binding = session ? sessionBinding(session, bound) : nonce ? `form:${nonce}` : undefined
      if (!binding) return false
      const expected = Buffer.from(tokenOf(binding))
      const given = Buffer.from(sent)
      return expected.length === given.length && timingSafeEqual(expected, given)
    },
  }
}

/** The key of the pages' CSRF tokens, derived from the service's encryption key. */
export const formKeyOf = (encryptionKey: Buffer) =>
  Buffer.from(hkdfSync('sha256', encryptionKey, '', 'ehr sign-in page forms', 32))
