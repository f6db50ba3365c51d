import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import { isRole, type Role } from '../../access/roles.js'
import { AppError } from '../../errors.js'
import { checkPasswordPolicy } from '../../identity/password-policy.js'
import { hashPassword } from '../../lib/passwords.js'
import { insertOrganization, insertUser } from './queries.js'

const GROUP_PATH = /^(\/[A-Za-z0-9_.-]+)+$/
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/

export interface NewOrganization {
  name: string
  /** The organization's group in the identity provider, e.g. /practices/north; tokens carry it in `groups`. */
  groupPath: string
}

export async function createOrganization(db: Kysely<Database>, organization: NewOrganization) {
  if (!GROUP_PATH.test(organization.groupPath)) {
    throw new AppError('VAL_001', 'groupPath must look like /segment or /segment/segment')
  }
  return insertOrganization(db, organization)
}

export interface NewUser {
  organizationId: number
  email: string
  firstName: string
  lastName: string
  roles: string[]
  /** Omitted for accounts that only sign in through an external identity provider. */
  password?: string
  /** The token `sub` of an external provider's account; generated otherwise. */
  subject?: string
  /** The password was chosen for the user (e.g. generated): they must replace it before signing in. */
  temporaryPassword?: boolean
}

export function checkRoles(roles: string[]): Role[] {
  const unknown = roles.filter((role) => !isRole(role))
  if (unknown.length > 0) throw new AppError('VAL_001', `Unknown roles: ${unknown.join(', ')}`)
  if (roles.length === 0) throw new AppError('VAL_002', 'At least one role is required')
  return roles as Role[]
}

export async function createUser(db: Kysely<Database>, user: NewUser) {
  if (!EMAIL.test(user.email)) throw new AppError('VAL_001', 'email is not an e-mail address')
  if (user.password !== undefined) checkPasswordPolicy(user.password, { email: user.email }, 'password')
  return insertUser(db, {
    organization_id: user.organizationId,
    subject: user.subject ?? randomUUID(),
    email: user.email,
    password_hash: user.password === undefined ? null : await hashPassword(user.password),
    first_name: user.firstName,
    last_name: user.lastName,
    roles: checkRoles(user.roles),
    password_change_required: user.temporaryPassword ?? false,
  })
}
