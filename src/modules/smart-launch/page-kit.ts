import type { TSchema } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { htmlPage, RedirectToApp } from '../../../schemas/smart-launch.js'
import {
  type AuthorizationParameters,
  type AuthorizationRequest,
  RedirectedError,
  redirectTo,
  UnredirectableError,
} from './authorization-request.js'
import { type BrowserSession, browserCookies, formKeyOf } from './browser-sessions.js'
import { PAGE_SECURITY_POLICY } from './html.js'
import { errorPage, type FormContext } from './pages.js'

// What the routes of the authorization endpoint's pages share: how a page or a redirect is sent,
// how a refusal is answered, the forms' CSRF tokens, and the pages' OpenAPI responses.

export const AUTHORIZE = '/protocol/openid-connect/auth'
export const tags = ['OpenID Connect']

/** The CSRF binding of a form carrying the patient the user chose: the id must come back unchanged. */
const patientBinding = (patientId: number | string) => `patient:${patientId}`

export function pageKit({ issuerUrl, encryptionKey }: { issuerUrl: string; encryptionKey: Buffer }) {
  const action = `${new URL(issuerUrl).pathname}${AUTHORIZE}`
  const cookies = browserCookies(action, issuerUrl.startsWith('https:'), formKeyOf(encryptionKey))

  const show = (reply: FastifyReply, status: number, body: string) =>
    reply
      .code(status)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', PAGE_SECURITY_POLICY)
      .header('x-frame-options', 'DENY')
      .header('cache-control', 'no-store')
      .send(body)

  const redirect = (reply: FastifyReply, location: string) =>
    reply.code(303).header('cache-control', 'no-store').header('location', location).send()

  /** Back to the app: its redirect URI with the answer, the state and the issuer. */
  const backToApp = (
    request: Pick<AuthorizationRequest, 'redirectUri' | 'state'>,
    answer: Record<string, string>,
  ) => redirectTo(request, answer, issuerUrl)

  return {
    cookies,
    show,
    redirect,
    redirectTo: backToApp,

    /** Answers an error of the request: at the app's redirect URI when it is a registered one, else as a page. */
    refuse(reply: FastifyReply, error: unknown) {
      if (error instanceof RedirectedError) {
        return redirect(
          reply,
          backToApp(error.request, { error: error.error, error_description: error.description }),
        )
      }
      if (error instanceof UnredirectableError)
        return show(reply, 400, errorPage('Cannot continue', error.title))
      throw error
    },

    refusedForm: (reply: FastifyReply) =>
      show(
        reply,
        403,
        errorPage('Form expired', 'This form is not valid any more. Go back to the app and start again.'),
      ),

    /** A form's action, hidden fields and CSRF token; `patientId`, the patient chosen, travels bound to it. */
    formContext(
      request: FastifyRequest,
      reply: FastifyReply,
      parameters: AuthorizationParameters,
      session: BrowserSession | undefined,
      patientId?: number,
    ): FormContext {
      if (patientId === undefined) {
        return { action, parameters, csrf: cookies.formToken(request, reply, session) }
      }
      return {
        action,
        parameters,
        fields: { patient: String(patientId) },
        csrf: cookies.formToken(request, reply, session, patientBinding(patientId)),
      }
    },

    /**
     * Whether a signed-in user's form carries its CSRF token, the patient it carries (if any)
     * unchanged since the page was shown.
     */
    validForm: (request: FastifyRequest, session: BrowserSession, form: Record<string, unknown>) =>
      cookies.validFormToken(
        request,
        session,
        form.csrf,
        form.patient === undefined ? undefined : patientBinding(text(form.patient)),
      ),
  }
}

export type PageKit = ReturnType<typeof pageKit>

export const formOf = (request: FastifyRequest) => (request.body ?? {}) as Record<string, unknown>
export const text = (value: unknown) => (typeof value === 'string' ? value : '')

export const pageResponses = {
  200: htmlPage('The next page: sign-in, password change, patient picker or consent'),
  303: RedirectToApp,
  400: htmlPage(
    'The request cannot be answered at a redirect URI of the app (unknown app, unregistered redirect URI)',
  ),
  403: htmlPage('The form is not valid any more (its CSRF token)'),
  413: htmlPage('The form is too large'),
  415: htmlPage('The form is not application/x-www-form-urlencoded'),
  429: htmlPage('Too many requests'),
  '5XX': htmlPage('The service failed'),
}

/** The OpenAPI schema of a page's form route: the pages' responses, and the route's own. */
export const pageSchema = (
  operationId: string,
  summary: string,
  body: TSchema,
  responses: Record<number, ReturnType<typeof htmlPage>>,
  description?: string,
) => ({
  tags,
  operationId,
  summary,
  ...(description ? { description } : {}),
  security: [],
  consumes: ['application/x-www-form-urlencoded'],
  body,
  response: { ...pageResponses, ...responses },
})

const MAX_ID = 2_147_483_647

/** A form's patient id, if it is one (a positive integer of the database's range). */
export function patientIdOf(value: unknown): number | undefined {
  const digits = text(value)
  if (!/^[1-9][0-9]{0,9}$/.test(digits)) return undefined
  const id = Number(digits)
  return id <= MAX_ID ? id : undefined
}
