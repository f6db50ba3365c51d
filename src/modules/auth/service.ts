export { changePassword } from './password-changes.js'

import type { CurrentUser } from '../../../schemas/auth.js'
import { invalidFields } from '../../errors.js'
import type { Principal } from '../../identity/principal.js'

/** The refresh token of a refresh or logout body, whichever spelling the client used. */
export function presentedRefreshToken(body: { refresh_token?: string; refreshToken?: string }): string {
  const token = body.refresh_token ?? body.refreshToken
  if (!token) throw invalidFields([{ path: 'refresh_token', message: 'is required' }], undefined, 'VAL_002')
  return token
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
