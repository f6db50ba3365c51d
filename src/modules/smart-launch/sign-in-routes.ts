import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { htmlPage, PasswordChangeForm, SignInForm } from '../../../schemas/smart-launch.js'
import { AppError } from '../../errors.js'
import { checkPassword } from '../../identity/login.js'
import { SIGN_IN_ROUTE } from '../../plugins/rate-limit.js'
import { changePassword } from '../auth/service.js'
import type { AuthorizationFlow } from './authorization-flow.js'
import { authorizationParametersOf } from './authorization-request.js'
import { auditLaunchStep } from './launch-audit.js'
import { AUTHORIZE, formOf, type PageKit, pageSchema, text } from './page-kit.js'
import { passwordChangePage, signInPage } from './pages.js'

const signInResponses = {
  401: htmlPage('The sign-in page again: wrong email or password'),
  422: htmlPage('The password page again: the new password breaks the password rules'),
}

/** The sign-in page's form, and the temporary-password change it may lead to. */
export function signInRoutes(app: FastifyInstance, kit: PageKit, flow: AuthorizationFlow) {
  /** Signs the user in on the pages and audits it, then carries the request on. */
  async function signedIn(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: number,
    organizationId: number,
  ) {
    const id = await kit.cookies.startSession(app.db, reply, userId)
    await auditLaunchStep(app.db, {
      organizationId,
      userId,
      action: 'SIGN_IN',
      resourceType: 'session',
      status: 200,
      requestId: request.id,
    })
    const parameters = authorizationParametersOf(request.body)
    return flow.continueAuthorization(request, reply, parameters, { id, userId, organizationId })
  }

  app.post(
    `${AUTHORIZE}/sign-in`,
    {
      schema: pageSchema('authorizeSignIn', 'Sign-in page form', SignInForm, signInResponses),
      config: SIGN_IN_ROUTE,
    },
    async (request, reply) => {
      const form = formOf(request)
      if (!kit.cookies.validFormToken(request, undefined, form.csrf)) return kit.refusedForm(reply)
      const parameters = authorizationParametersOf(form)
      const username = text(form.username)
      const again = async (status: number, error: string) => {
        try {
          const authorization = await flow.check(parameters)
          const context = kit.formContext(request, reply, parameters, undefined)
          return kit.show(
            reply,
            status,
            signInPage(context, { appName: authorization.app.name, error, username }),
          )
        } catch (problem) {
          return kit.refuse(reply, problem)
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
        const context = kit.formContext(request, reply, parameters, undefined)
        return kit.show(reply, 200, passwordChangePage(context, { username }))
      }
      return signedIn(request, reply, user.id, user.organization_id)
    },
  )

  app.post(
    `${AUTHORIZE}/password`,
    {
      schema: pageSchema(
        'authorizePasswordChange',
        'Temporary-password page form',
        PasswordChangeForm,
        signInResponses,
      ),
      config: SIGN_IN_ROUTE,
    },
    async (request, reply) => {
      const form = formOf(request)
      if (!kit.cookies.validFormToken(request, undefined, form.csrf)) return kit.refusedForm(reply)
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
        const context = kit.formContext(request, reply, parameters, undefined)
        return kit.show(reply, error.status, passwordChangePage(context, { username, error: message }))
      }
      const user = await checkPassword(app.db, username, passwords.newPassword)
      return signedIn(request, reply, user.id, user.organization_id)
    },
  )
}
