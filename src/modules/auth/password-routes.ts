import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ChangePasswordBody,
  ForgotPasswordBody,
  PasswordEnvelope,
  ResetPasswordBody,
} from '../../../schemas/auth.js'
import { ok } from '../../http/envelope.js'
import { errorResponse } from '../../http/responses.js'
import type { Mailer } from '../../lib/mailer.js'
import { SIGN_IN_ROUTE } from '../../plugins/rate-limit.js'
import {
  changePassword,
  changePasswordAccount,
  resetPassword,
  sendPasswordResetLink,
} from './password-changes.js'

const tags = ['Authentication']

/** Password reset by mail and password change; only offered when the service issues its own tokens. */
const passwordRoutes: FastifyPluginAsyncTypebox<{ mailer: Mailer; resetUrl: string }> = async (
  app,
  { mailer, resetUrl },
) => {
  app.post(
    '/forgot-password',
    {
      schema: {
        tags,
        operationId: 'forgotPassword',
        summary: 'Mail a password reset link',
        description:
          'If the address belongs to an active account with a password, mails it a link to the reset page with a single-use token valid for 30 minutes. The answer is the same, and as fast, whether or not the account exists: the mail is sent after the response.',
        body: ForgotPasswordBody,
        response: { 200: PasswordEnvelope },
      },
    },
    async (request) => {
      const { email } = request.body
      app.background.run('password reset mail', () =>
        sendPasswordResetLink(app.db, mailer, { email, resetUrl }),
      )
      return ok('If the address belongs to an account, a reset link has been sent to it', {})
    },
  )

  app.post(
    '/reset-password',
    {
      schema: {
        tags,
        operationId: 'resetPassword',
        summary: 'Set a new password with the token of a reset mail',
        description:
          'The token works once. On success the password is replaced, a temporary password no longer needs changing, and every session of the account ends (its refresh tokens stop working; access tokens already issued stay valid until they expire).',
        body: ResetPasswordBody,
        response: {
          200: PasswordEnvelope,
          400: errorResponse(
            400,
            'The reset token is invalid, expired or already used (AUTH_001); malformed JSON (VAL_001)',
          ),
        },
      },
    },
    async (request) => {
      await resetPassword(app.db, request.body)
      return ok('Password reset; sign in with the new password', {})
    },
  )

  app.post(
    '/change-password',
    {
      config: SIGN_IN_ROUTE,
      schema: {
        tags,
        operationId: 'changePassword',
        summary: 'Change a password, knowing the current one',
        description:
          'Signed in, send the bearer token and the current password. A user whose password is temporary gets no tokens at login, so this route also works without a token: send `username` with the current password. The route therefore needs no token, but checks one when an Authorization header is sent. On success every session of the account ends (access tokens already issued stay valid until they expire); sign in again with the new password.',
        body: ChangePasswordBody,
        response: {
          200: PasswordEnvelope,
          401: errorResponse(
            401,
            'Wrong username or current password, or an invalid or expired bearer token (AUTH_001, AUTH_002)',
          ),
          403: errorResponse(
            403,
            "The username is not the bearer token's account, or the token fails the organization check (AUTH_003)",
          ),
        },
      },
    },
    async (request, reply) => {
      const { username, ...passwords } = request.body
      const principal = request.headers.authorization === undefined ? null : await app.authenticate(request)
      const account = changePasswordAccount(principal, username)
      // Checking the current password is a sign-in attempt, with or without a token.
      await app.signInAttempt(request, reply, account, () => changePassword(app.db, account, passwords))
      return ok('Password changed; sign in with the new password', {})
    },
  )
}

export default passwordRoutes
