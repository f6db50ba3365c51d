import formbody from '@fastify/formbody'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Db } from '../../../db/database.js'
import {
  AuthorizationRequest as AuthorizationQuery,
  ConsentForm,
  htmlPage,
  PasswordChangeForm,
  RedirectToApp,
  SignInForm,
} from '../../../schemas/smart-launch.js'
import type { FhirScopeRules } from '../../access/grantable-scopes.js'
import { authorityOf } from '../../access/roles.js'
import { AppError } from '../../errors.js'
import { checkPassword } from '../../identity/login.js'
import { SIGN_IN_ROUTE } from '../../plugins/rate-limit.js'
import { changePassword } from '../auth/service.js'
import { recordGrant, redeemLaunch } from '../smart-apps/service.js'
import { issueCode } from './authorization-codes.js'
import {
  type AuthorizationParameters,
  type AuthorizationRequest,
  authorizationParametersOf,
  checkAuthorizationRequest,
  RedirectedError,
  redirectTo,
  UnredirectableError,
} from './authorization-request.js'
import { type BrowserSession, browserCookies, formKeyOf } from './browser-sessions.js'
import { grantableByUser, scopeInWords } from './granted-scopes.js'
import { PAGE_SECURITY_POLICY } from './html.js'
import { auditLaunchStep } from './launch-audit.js'
import { launchContextOf, standingGrant } from './launch-grants.js'
import { consentPage, errorPage, type FormContext, passwordChangePage, signInPage } from './pages.js'

interface LaunchRouteOptions {
  issuerUrl: string
  /** The FHIR base URL, which an authorization request's `aud` must name. */
  fhirBase: string
  fhirScopes: FhirScopeRules
  /** The service's encryption key, from which the forms' CSRF key is derived. */
  encryptionKey: Buffer
}

const AUTHORIZE = '/protocol/openid-connect/auth'
const tags = ['OpenID Connect']

/** What the user and the request come to, once signed in: the scopes and patient context to grant. */
interface Decision {
  request: AuthorizationRequest
  session: BrowserSession
  scopes: string[]
  patientId: number | undefined
  encounterId: number | undefined
  /** SMART's need_patient_banner: false when the EHR, which launched the app, shows the patient. */
  needPatientBanner: boolean
}

/**
 * The authorization endpoint of SMART App Launch (RFC 6749 §4.1 with PKCE) at Keycloak's path, and
 * the pages it shows: sign-in (with the temporary-password change) and consent. Plain HTML, no
 * script, never framed; every form carries a CSRF token.
 */
const launchRoutes: FastifyPluginAsync<LaunchRouteOptions> = async (
  app,
  { issuerUrl, fhirBase, fhirScopes, encryptionKey },
) => {
  await app.register(formbody)
  // Whatever fails here is a page, for the person in front of it: never JSON, never a redirect.
  app.setErrorHandler((error, request, reply) => {
    // The rate limit's refusal (RATE_001) is an AppError, which carries its status as `status`.
    const status =
      error instanceof AppError ? error.status : ((error as { statusCode?: number }).statusCode ?? 500)
    if (status >= 500)
      request.log.error({ err: { message: (error as Error).message } }, 'authorization page failed')
    const message =
      status === 429
        ? 'Too many requests. Wait a minute, then try again.'
        : status >= 500
          ? 'The service could not complete this step. Try again later.'
          : 'The request could not be read.'
    return show(reply, status >= 400 ? status : 500, errorPage('Cannot continue', message))
  })
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

  /** Answers an error of the request: at the app's redirect URI when it is a registered one, else as a page. */
  function refuse(reply: FastifyReply, error: unknown) {
    if (error instanceof RedirectedError) {
      return redirect(
        reply,
        redirectTo(error.request, { error: error.error, error_description: error.description }, issuerUrl),
      )
    }
    if (error instanceof UnredirectableError)
      return show(reply, 400, errorPage('Cannot continue', error.title))
    throw error
  }

  const formContext = (
    request: FastifyRequest,
    reply: FastifyReply,
    parameters: AuthorizationParameters,
    session: BrowserSession | undefined,
  ): FormContext => ({ action, parameters, csrf: cookies.formToken(request, reply, session) })

  /** The user's account as far as granting goes: roles, organization, own patient record. */
  const accountOf = (db: Db, userId: number) =>
    db
      .selectFrom('users')
      .select(['id', 'organization_id', 'roles', 'patient_id'])
      .where('id', '=', userId)
      .where('active', '=', true)
      .executeTakeFirst()

  /** What the signed-in user may grant the app, and the patient context; throws RedirectedError. */
  async function decide(request: AuthorizationRequest, session: BrowserSession): Promise<Decision> {
    const back = (error: string, description: string) => new RedirectedError(request, error, description)
    const account = await accountOf(app.db, session.userId)
    if (!account || account.organization_id !== request.app.organization_id) {
      throw back('access_denied', 'The app is not registered with the practice of the account signed in')
    }
    const scopes = grantableByUser(request.scopes, new Set(account.roles.map(authorityOf)), fhirScopes)
    if (scopes.length === 0)
      throw back('invalid_scope', 'None of the scopes asked for may be granted to this user')
    if (request.launch !== undefined) {
      const context = await launchContextOf(app.db, request.launch, account.organization_id, request.app.id)
      if (!context) throw back('invalid_request', 'The launch is unknown, used or expired')
      return { request, session, scopes, ...context, needPatientBanner: false }
    }
    if (scopes.includes('launch/patient')) {
      if (account.patient_id === null) {
        throw back('invalid_scope', 'A standalone launch with launch/patient needs a patient account')
      }
      return {
        request,
        session,
        scopes,
        patientId: account.patient_id,
        encounterId: undefined,
        needPatientBanner: true,
      }
    }
    return { request, session, scopes, patientId: undefined, encounterId: undefined, needPatientBanner: true }
  }

  /**
   * Issues the code of an allowed decision, using up an EHR launch with it (one transaction), and
   * sends the user back to the app with it.
   */
  async function answerWithCode(reply: FastifyReply, decision: Decision, appGrantId: number) {
    const { request, session } = decision
    const code = await app.db.transaction().execute(async (trx) => {
      if (request.launch !== undefined) {
        const launched = await redeemLaunch(trx, request.launch, {
          organizationId: session.organizationId,
          appId: request.app.id,
        })
        if (!launched) {
          throw new RedirectedError(request, 'invalid_request', 'The launch is unknown, used or expired')
        }
      }
      return issueCode(trx, {
        organizationId: session.organizationId,
        appId: request.app.id,
        userId: session.userId,
        appGrantId,
        browserSessionId: session.id,
        redirectUri: request.redirectUri,
        scopes: decision.scopes,
        codeChallenge: request.codeChallenge,
        nonce: request.nonce,
        patientId: decision.patientId,
        encounterId: decision.encounterId,
        needPatientBanner: decision.needPatientBanner,
      })
    })
    return redirect(reply, redirectTo(request, { code }, issuerUrl))
  }

  const patientName = async (organizationId: number, patientId: number | undefined) => {
    if (patientId === undefined) return undefined
    const row = await app.db
      .selectFrom('patients')
      .select(['first_name', 'last_name', 'date_of_birth'])
      .where('organization_id', '=', organizationId)
      .where('id', '=', patientId)
      .executeTakeFirst()
    return row && `${row.first_name} ${row.last_name}`
  }

  /**
   * Carries an authorization request as far as it can go: sign-in when nobody is signed in, then
   * consent unless the user's standing grant covers what the app asks, then the code.
   */
  async function continueAuthorization(
    request: FastifyRequest,
    reply: FastifyReply,
    parameters: AuthorizationParameters,
    signedIn?: BrowserSession,
  ) {
    try {
      const authorization = await checkAuthorizationRequest(app.db, parameters, fhirBase)
      const session = signedIn ?? (await cookies.sessionOf(app.db, request))
      if (!session) {
        const context = formContext(request, reply, parameters, undefined)
        return show(reply, 200, signInPage(context, { appName: authorization.app.name }))
      }
      const decision = await decide(authorization, session)
      const standing = await standingGrant(app.db, session.userId, authorization.app.id)
      if (standing && decision.scopes.every((scope) => standing.scopes.includes(scope))) {
        return await answerWithCode(reply, decision, standing.id)
      }
      const context = formContext(request, reply, parameters, session)
      return show(
        reply,
        200,
        consentPage(context, {
          appName: authorization.app.name,
          access: decision.scopes.map(scopeInWords),
          patient: await patientName(session.organizationId, decision.patientId),
        }),
      )
    } catch (error) {
      return refuse(reply, error)
    }
  }

  const formOf = (request: FastifyRequest) => (request.body ?? {}) as Record<string, unknown>
  const text = (value: unknown) => (typeof value === 'string' ? value : '')

  const pageResponses = {
    200: htmlPage('The next page: sign-in, password change or consent'),
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
  const authorizationSchema = (method: string) => ({
    tags,
    operationId: `authorize${method}`,
    summary: `Authorization endpoint (SMART App Launch, ${method})`,
    description:
      'The authorization code flow with PKCE (S256 only). Shows the sign-in page to a browser not signed in, then the consent page unless the user’s standing grant to the app covers what it asks, then returns to the app’s redirect URI with a code (single use, 60 s). Errors return there too once the app and redirect URI are known; before, they are shown as a page.',
    security: [],
  })

  // RFC 6749 §3.1: the authorization endpoint takes GET, and POST with the same parameters.
  app.get(
    AUTHORIZE,
    { schema: { ...authorizationSchema('Get'), querystring: AuthorizationQuery, response: pageResponses } },
    (request, reply) => continueAuthorization(request, reply, authorizationParametersOf(request.query)),
  )
  app.post(
    AUTHORIZE,
    {
      schema: {
        ...authorizationSchema('Post'),
        consumes: ['application/x-www-form-urlencoded'],
        body: AuthorizationQuery,
        response: pageResponses,
      },
    },
    (request, reply) => continueAuthorization(request, reply, authorizationParametersOf(request.body)),
  )

  const refusedForm = (reply: FastifyReply) =>
    show(
      reply,
      403,
      errorPage('Form expired', 'This form is not valid any more. Go back to the app and start again.'),
    )

  /** Signs the user in on the pages and audits it, then carries the request on. */
  async function signedIn(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: number,
    organizationId: number,
  ) {
    const id = await cookies.startSession(app.db, reply, userId)
    await auditLaunchStep(app.db, {
      organizationId,
      userId,
      action: 'SIGN_IN',
      resourceType: 'session',
      status: 200,
      requestId: request.id,
    })
    const parameters = authorizationParametersOf(request.body)
    return continueAuthorization(request, reply, parameters, { id, userId, organizationId })
  }

  const pageSchema = (operationId: string, summary: string, body: TSchema) => ({
    tags,
    operationId,
    summary,
    security: [],
    consumes: ['application/x-www-form-urlencoded'],
    body,
    response: {
      ...pageResponses,
      401: htmlPage('The sign-in page again: wrong email or password'),
      422: htmlPage('The password page again: the new password breaks the password rules'),
    },
  })

  app.post(
    `${AUTHORIZE}/sign-in`,
    {
      schema: pageSchema('authorizeSignIn', 'Sign-in page form', SignInForm),
      config: SIGN_IN_ROUTE,
    },
    async (request, reply) => {
      const form = formOf(request)
      if (!cookies.validFormToken(request, undefined, form.csrf)) return refusedForm(reply)
      const parameters = authorizationParametersOf(form)
      const username = text(form.username)
      const again = async (status: number, error: string) => {
        try {
          const authorization = await checkAuthorizationRequest(app.db, parameters, fhirBase)
          const context = formContext(request, reply, parameters, undefined)
          return show(
            reply,
            status,
            signInPage(context, { appName: authorization.app.name, error, username }),
          )
        } catch (problem) {
          return refuse(reply, problem)
        }
      }
      let user: Awaited<ReturnType<typeof checkPassword>>
      try {
        user = await app.signInAttempt(request, reply, username, () =>
          checkPassword(app.db, username, text(form.password)),
        )
      } catch (error) {
        if (error instanceof AppError && error.code === 'AUTH_001')
          return again(401, 'Wrong email or password.')
        if (error instanceof AppError && error.code === 'RATE_001') {
          return again(429, 'Too many attempts. Wait a few minutes, then try again.')
        }
        throw error
      }
      if (user.password_change_required) {
        const context = formContext(request, reply, parameters, undefined)
        return show(reply, 200, passwordChangePage(context, { username }))
      }
      return signedIn(request, reply, user.id, user.organization_id)
    },
  )

  app.post(
    `${AUTHORIZE}/password`,
    {
      schema: pageSchema('authorizePasswordChange', 'Temporary-password page form', PasswordChangeForm),
      config: SIGN_IN_ROUTE,
    },
    async (request, reply) => {
      const form = formOf(request)
      if (!cookies.validFormToken(request, undefined, form.csrf)) return refusedForm(reply)
      const parameters = authorizationParametersOf(form)
      const username = text(form.username)
      const passwords = { currentPassword: text(form.currentPassword), newPassword: text(form.newPassword) }
      try {
        await app.signInAttempt(request, reply, username, () => changePassword(app.db, username, passwords))
      } catch (error) {
        if (!(error instanceof AppError) || error.status >= 500) throw error
        const message =
          error.code === 'AUTH_001'
            ? 'The temporary password is wrong.'
            : error.code === 'RATE_001'
              ? 'Too many attempts. Wait a few minutes, then try again.'
              : (error.fields?.map((field) => `The new password ${field.message}.`).join(' ') ??
                error.details)
        const context = formContext(request, reply, parameters, undefined)
        return show(reply, error.status, passwordChangePage(context, { username, error: message }))
      }
      const user = await checkPassword(app.db, username, passwords.newPassword)
      return signedIn(request, reply, user.id, user.organization_id)
    },
  )

  app.post(
    `${AUTHORIZE}/consent`,
    { schema: pageSchema('authorizeConsent', 'Consent page form', ConsentForm) },
    async (request, reply) => {
      const form = formOf(request)
      const session = await cookies.sessionOf(app.db, request)
      if (!session || !cookies.validFormToken(request, session, form.csrf)) return refusedForm(reply)
      const parameters = authorizationParametersOf(form)
      try {
        const authorization = await checkAuthorizationRequest(app.db, parameters, fhirBase)
        const decision = await decide(authorization, session)
        const step = {
          organizationId: session.organizationId,
          userId: session.userId,
          resourceType: 'smart-app' as const,
          ids: [authorization.app.id],
          patientId: decision.patientId ?? null,
          requestId: request.id,
        }
        if (form.decision !== 'approve') {
          await auditLaunchStep(app.db, { ...step, action: 'DENY', status: 303 })
          throw new RedirectedError(authorization, 'access_denied', 'The user denied the app access')
        }
        const grantId = await app.db.transaction().execute((trx) =>
          recordGrant(trx, {
            organizationId: session.organizationId,
            userId: session.userId,
            appId: authorization.app.id,
            scopes: decision.scopes,
          }),
        )
        await auditLaunchStep(app.db, { ...step, action: 'CONSENT', status: 303 })
        return await answerWithCode(reply, decision, grantId)
      } catch (error) {
        return refuse(reply, error)
      }
    },
  )
}

export default launchRoutes
