import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { CurrentUser, LoginBody, LoginResult } from '../../../schemas/auth.js'
import { AppError } from '../../errors.js'
import { decoyHash, verifyPassword } from '../../lib/passwords.js'
import type { Principal } from './principal.js'
import { findLoginCandidate, insertSession } from './queries.js'
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, type TokenIssuer } from './token-issuer.js'

const invalidCredentials = () =>
  new AppError('AUTH_001', 'Invalid username or password', { message: 'Invalid credentials' })

const hashRefreshToken = (token: string) => createHash('sha256').update(token).digest('base64url')

/**
 * Password sign-in against the embedded issuer. An unknown user costs the same hash comparison
 * as a wrong password, and both get the same answer.
 */
export async function login(
  db: Kysely<Database>,
  issuer: TokenIssuer,
  body: LoginBody,
): Promise<LoginResult> {
  const user = await findLoginCandidate(db, body.username)
  const passwordMatches = await verifyPassword(body.password, user?.password_hash ?? (await decoyHash()))
  if (!user?.password_hash || !passwordMatches) throw invalidCredentials()

  const sessionId = randomUUID()
  const refreshToken = randomBytes(32).toString('base64url')
  await insertSession(db, {
    id: sessionId,
    userId: user.id,
    refreshTokenHash: hashRefreshToken(refreshToken),
    expiresAt: new Date(Date.now() + REFRESH_TOKEN_TTL_SECONDS * 1000),
  })
  const token = issuer.issueAccessToken(
    {
      subject: user.subject,
      email: user.email,
      firstName: user.first_name,
      lastName: user.last_name,
      roles: user.roles,
      groupPath: user.group_path,
    },
    sessionId,
  )
  return {
    token,
    refreshToken,
    expiresIn: ACCESS_TOKEN_TTL_SECONDS,
    user: {
      id: user.id,
      email: user.email,
      firstName: user.first_name,
      lastName: user.last_name,
      role: user.roles[0] ?? 'USER',
    },
  }
}

export function currentUser(principal: Principal): CurrentUser {
  return {
    id: String(principal.userId),
    email: principal.email,
    firstName: principal.firstName,
    lastName: principal.lastName,
    roles: principal.roles,
    organizationId: principal.organizationId,
  }
}
