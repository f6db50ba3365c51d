import type { Db, Trx } from '../../../db/database.js'
import type { ChangePasswordBody, ResetPasswordBody } from '../../../schemas/auth.js'
import { AppError, forbidden, invalidFields } from '../../errors.js'
import { findLoginCandidate } from '../../identity/account-queries.js'
import { checkPassword, invalidCredentials } from '../../identity/login.js'
import { hashPassword } from '../../identity/password-hashing.js'
import { checkPasswordPolicy } from '../../identity/password-policy.js'
import type { Principal } from '../../identity/principal.js'
import { hashToken, newOpaqueToken, revokeUserSessions } from '../../identity/sessions.js'
import type { Mailer } from '../../lib/mailer.js'
import {
  claimPasswordResetToken,
  findPasswordResetAccount,
  insertPasswordResetToken,
  retirePasswordResetTokens,
  updatePasswordHash,
} from './queries.js'

// Long enough to read the mail and act on it; short enough that a link found later in a mailbox
// (or a mail archive) is useless.
const RESET_TOKEN_TTL_MINUTES = 30

const invalidResetToken = () =>
  new AppError('AUTH_001', 'The reset link is invalid, expired or already used; request a new one', {
    status: 400,
    message: 'Invalid reset token',
  })

function resetMail(to: string, link: string) {
  return {
    to,
    subject: 'Reset your EHR password',
    text: [
      'Someone (hopefully you) asked to reset the password of the EHR account for this address.',
      '',
      `To choose a new password, open this link within ${RESET_TOKEN_TTL_MINUTES} minutes. It works once:`,
      link,
      '',
      'If you did not ask for this, ignore this mail: your password stays as it is.',
    ].join('\n'),
  }
}

/**
 * Mails a single-use reset link to the address if it belongs to an active person's account with a
 * password; does nothing otherwise. The caller answers the same either way, without waiting for this.
 */
export async function sendPasswordResetLink(
  db: Db,
  mailer: Mailer,
  options: { email: string; resetUrl: string },
): Promise<void> {
  const account = await findLoginCandidate(db, options.email)
  if (!account?.password_hash) return
  const link = await issuePasswordResetLink(db, account.id, options.resetUrl)
  await mailPasswordResetLink(mailer, account.email, link)
}

/** Stores a single-use reset token for the account (its hash only) and returns the link that carries it. */
export async function issuePasswordResetLink(db: Db, userId: number, resetUrl: string): Promise<string> {
  const token = newOpaqueToken()
  await insertPasswordResetToken(db, {
    userId,
    tokenHash: hashToken(token),
    expiresAt: new Date(Date.now() + RESET_TOKEN_TTL_MINUTES * 60_000),
  })
  const link = new URL(resetUrl)
  link.searchParams.set('token', token)
  return link.toString()
}

export function mailPasswordResetLink(mailer: Mailer, email: string, link: string): Promise<void> {
  return mailer.send(resetMail(email, link))
}

/** After any password replacement: every session and every outstanding reset link of the user ends. */
async function endCredentialsOf(trx: Trx, userId: number, reason: string) {
  await revokeUserSessions(trx, userId, reason)
  await retirePasswordResetTokens(trx, userId)
}

export async function resetPassword(db: Db, body: ResetPasswordBody): Promise<void> {
  const tokenHash = hashToken(body.token)
  const account = await findPasswordResetAccount(db, tokenHash)
  if (!account) throw invalidResetToken()
  checkPasswordPolicy(body.newPassword, { email: account.email }, 'newPassword')
  const passwordHash = await hashPassword(body.newPassword)
  await db.transaction().execute(async (trx) => {
    // The lookup above only fails fast; this claim is what makes the token single-use.
    const claimed = await claimPasswordResetToken(trx, tokenHash)
    if (!claimed) throw invalidResetToken()
    await updatePasswordHash(trx, claimed.user_id, passwordHash)
    await endCredentialsOf(trx, claimed.user_id, 'PASSWORD_RESET')
  })
}

/**
 * Whose password a change-password call is about: the token's account when a bearer token was sent
 * (a username, if given, must name it too), otherwise the username, which is then required.
 */
export function changePasswordAccount(principal: Principal | null, username: string | undefined): string {
  if (!principal) {
    if (username === undefined)
      throw invalidFields(
        [{ path: 'username', message: 'is required without a bearer token' }],
        undefined,
        'VAL_002',
      )
    return username
  }
  if (username !== undefined && username.toLowerCase() !== principal.email.toLowerCase()) {
    throw forbidden('A bearer token can change only the password of its own account')
  }
  return principal.email
}

export async function changePassword(
  db: Db,
  username: string,
  body: Omit<ChangePasswordBody, 'username'>,
): Promise<void> {
  // Same lookup and cost as a login, so a wrong password answers like one.
  const account = await checkPassword(db, username, body.currentPassword)
  checkPasswordPolicy(
    body.newPassword,
    { email: account.email, currentPassword: body.currentPassword },
    'newPassword',
  )
  const passwordHash = await hashPassword(body.newPassword)
  await db.transaction().execute(async (trx) => {
    const previousHash = account.password_hash as string
    if (!(await updatePasswordHash(trx, account.id, passwordHash, previousHash))) throw invalidCredentials()
    await endCredentialsOf(trx, account.id, 'PASSWORD_CHANGE')
  })
}
