import type { Db } from '../../db/database.js'
import type { LoginBody, LoginResult } from '../../schemas/auth.js'
import { AppError } from '../errors.js'
import { findLoginCandidate } from './account-queries.js'
import { decoyHash, verifyPassword, withHashing } from './password-hashing.js'
import { type SessionTokens, startSession } from './sessions.js'
import type { TokenIssuer } from './token-issuer.js'

export const invalidCredentials = () =>
  new AppError('AUTH_001', 'Invalid username or password', { message: 'Invalid credentials' })

/**
 * Checks a password against the account it names. An unknown user costs the same hash comparison
 * as a wrong password, and both get the same error. While hashing is saturated the check is
 * refused (429) before the lookup.
 */
export function checkPassword(db: Db, username: string, password: string) {
  return withHashing(async () => {
    const user = await findLoginCandidate(db, username)
    const matches = await verifyPassword(password, user?.password_hash ?? (await decoyHash()))
    if (!user?.password_hash || !matches) throw invalidCredentials()
    return user
  })
}

export type LoginOutcome =
  | { kind: 'signed-in'; tokens: SessionTokens; user: LoginResult['user'] }
  | { kind: 'password-change-required' }

export async function login(
  db: Db,
  issuer: TokenIssuer,
  body: LoginBody,
  clientId: string,
): Promise<LoginOutcome> {
  const user = await checkPassword(db, body.username, body.password)
  if (user.password_change_required) return { kind: 'password-change-required' }
  return {
    kind: 'signed-in',
    tokens: await startSession(db, issuer, user.id, clientId),
    user: {
      id: user.id,
      email: user.email,
      firstName: user.first_name,
      lastName: user.last_name,
      role: user.roles[0] ?? 'USER',
    },
  }
}
