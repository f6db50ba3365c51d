import { randomBytes, randomUUID } from 'node:crypto'
import type { Db, Trx } from '../../../db/database.js'
import type { PageOf } from '../../../schemas/common.js'
import {
  type CreatedUser,
  type CreateUserBody,
  type PatchUserBody,
  UpdateUserBody,
  type User,
  type UserListQuery,
} from '../../../schemas/users.js'
import { type Actor, missingRecord } from '../../access/organization-scope.js'
import { isRole, type Role } from '../../access/roles.js'
import { auditChange, withChangeAudit } from '../../audit/change-audit.js'
import { conflict, constraintConflict, invalidField, invalidFields } from '../../errors.js'
import { hashPassword } from '../../identity/password-hashing.js'
import { checkPasswordPolicy } from '../../identity/password-policy.js'
import { revokeUserSessions } from '../../identity/sessions.js'
import { applyMergePatch, projectOnto } from '../../lib/merge-patch.js'
import { sortOrder, splitListQuery } from '../../lib/paging.js'
import { recordList } from '../../lib/row-list.js'
import { toUser } from './mapper.js'
import {
  type AccountRow,
  accountOwnerOrganization,
  accountRows,
  countOtherActiveAdmins,
  emailTaken,
  findAccount,
  insertOrganization,
  insertUser,
  lockAccount,
  lockAdministration,
  USER_SORT_COLUMNS,
  updateAccount,
} from './queries.js'

const GROUP_PATH = /^(\/[A-Za-z0-9_.-]+)+$/
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/

export interface NewOrganization {
  name: string
  /** The organization's group in the identity provider, e.g. /practices/north; tokens carry it in `groups`. */
  groupPath: string
}

export async function createOrganization(db: Db, organization: NewOrganization) {
  if (!GROUP_PATH.test(organization.groupPath)) {
    throw invalidField('groupPath', 'must look like /segment or /segment/segment')
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
  /** A patient's own account: its patient record, of the same organization (checked by the caller). */
  patientId?: number
}

export function checkRoles(roles: string[]): Role[] {
  const unknown = roles.filter((role) => !isRole(role))
  if (unknown.length > 0)
    throw invalidFields(
      [{ path: 'roles', message: `holds unknown roles: ${unknown.join(', ')}` }],
      `Unknown roles: ${unknown.join(', ')}`,
    )
  if (roles.length === 0)
    throw invalidFields(
      [{ path: 'roles', message: 'must hold at least one role' }],
      'At least one role is required',
      'VAL_002',
    )
  return roles as Role[]
}

export async function createUser(db: Db, user: NewUser) {
  if (!EMAIL.test(user.email)) throw invalidField('email', 'is not an e-mail address')
  if (user.password !== undefined) checkPasswordPolicy(user.password, { email: user.email }, 'password')
  const row = {
    organization_id: user.organizationId,
    subject: user.subject ?? randomUUID(),
    email: user.email,
    password_hash: user.password === undefined ? null : await hashPassword(user.password),
    first_name: user.firstName,
    last_name: user.lastName,
    roles: checkRoles(user.roles),
    password_change_required: user.temporaryPassword ?? false,
    patient_id: user.patientId ?? null,
  }
  return withChangeAudit(db, (db) => insertUser(db, row))
}

/** What the users API needs besides the database. */
export interface AccountSettings {
  /** With an external identity provider the provider owns the accounts: names, roles and passwords. */
  external: boolean
  /** Stores a single-use password-reset link for the account (the reset flow of /api/auth); returns it. */
  issueResetLink: (db: Db, userId: number) => Promise<string>
  /**
   * Mails the address the reset link `link` gives, after the response: a slow mail server (or, for
   * an invitation, storing the link) holds no request.
   */
  mailResetLink: (email: string, link: () => Promise<string>) => void
}

// As long as the operator script's generated passwords: 24 base64url characters.
const TEMPORARY_PASSWORD_BYTES = 18
// An invited person's password until they choose one through the mailed link: never shown to anyone.
const UNUSABLE_PASSWORD_BYTES = 32

export const managedByProvider = (what: string) =>
  conflict(
    `${what}: accounts belong to the external identity provider (OIDC_ISSUER_URL); make the change there`,
  )

export const duplicateEmail = () => constraintConflict('users_email_key')

const isDuplicateEmail = (error: unknown) => {
  const { code, constraint } = (error ?? {}) as { code?: string; constraint?: string }
  return code === '23505' && (constraint === undefined || constraint === 'users_email_key')
}

/** The organization rule for accounts: another organization's is 403, a missing one 404. */
async function missingAccount(db: Db, actor: Actor, id: number): Promise<never> {
  return missingRecord('User', id, await accountOwnerOrganization(db, id), actor)
}

async function requireAccount(db: Db, actor: Actor, id: number): Promise<AccountRow> {
  return (await findAccount(db, actor.organizationId, id)) ?? missingAccount(db, actor, id)
}

/** The account locked for a change, after the organization's administration lock (always in this order). */
async function lockForChange(trx: Trx, actor: Actor, id: number): Promise<AccountRow> {
  await lockAdministration(trx, actor.organizationId)
  return (await lockAccount(trx, actor.organizationId, id)) ?? missingAccount(trx, actor, id)
}

/**
 * An organization always keeps an active ADMIN, and no administrator takes the role away from
 * themselves (another one must): refused with 409 when `change` would break either rule.
 */
async function guardAdministrators(
  trx: Trx,
  actor: Actor,
  account: AccountRow,
  change: { roles?: readonly string[]; active?: boolean },
): Promise<void> {
  const isAdmin = account.active && account.roles.includes('ADMIN')
  const staysAdmin = (change.active ?? account.active) && (change.roles ?? account.roles).includes('ADMIN')
  if (!isAdmin || staysAdmin) return
  if (account.id === actor.userId && change.roles) {
    throw conflict('You cannot remove your own ADMIN role; another administrator can')
  }
  if ((await countOtherActiveAdmins(trx, actor.organizationId, account.id)) === 0) {
    throw conflict(
      `User ${account.id} is the last active ADMIN of the organization; give another account the ADMIN role first`,
    )
  }
}

const DEFAULT_SORT = { field: 'lastName', direction: 'asc' } as const

export async function listUsers(db: Db, actor: Actor, query: UserListQuery): Promise<PageOf<User>> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, USER_SORT_COLUMNS, DEFAULT_SORT)
  return recordList(accountRows(db, actor.organizationId, filters), paging, sort, (rows) =>
    rows.map(toUser),
  ).page()
}

export async function getUser(db: Db, actor: Actor, id: number): Promise<User> {
  return toUser(await requireAccount(db, actor, id))
}

/**
 * A person's account in the caller's organization. Either they are mailed a link to choose their
 * password (until then their password is a random one nobody knows), or a temporary password is
 * generated and returned here, once; either way they cannot sign in before choosing their own.
 */
export async function inviteUser(
  db: Db,
  actor: Actor,
  body: CreateUserBody,
  settings: AccountSettings,
): Promise<CreatedUser> {
  if (settings.external) throw managedByProvider('Accounts cannot be created here')
  if (await emailTaken(db, body.email)) throw duplicateEmail()
  const { row, temporaryPassword } = await createInvitedAccount(db, body.invite, settings, {
    organizationId: actor.organizationId,
    email: body.email,
    firstName: body.firstName,
    lastName: body.lastName,
    roles: body.roles,
  })
  return { ...toUser({ ...row, has_password: true }), temporaryPassword }
}

/**
 * Creates an invited person's account, which cannot sign in before its person chooses a password:
 * mailed a link to choose it (`email`, after the response), or given a temporary one returned here
 * once. A duplicate address (another request took it since the check) is 409.
 */
export async function createInvitedAccount(
  db: Db,
  invite: 'email' | 'temporaryPassword',
  settings: AccountSettings,
  user: Omit<NewUser, 'password' | 'temporaryPassword' | 'subject'>,
) {
  const temporaryPassword =
    invite === 'temporaryPassword' ? randomBytes(TEMPORARY_PASSWORD_BYTES).toString('base64url') : null
  let row: Awaited<ReturnType<typeof createUser>>
  try {
    row = await createUser(db, {
      ...user,
      password: temporaryPassword ?? randomBytes(UNUSABLE_PASSWORD_BYTES).toString('base64url'),
      temporaryPassword: true,
    })
  } catch (error) {
    // Another request took the address between the check and the insert.
    throw isDuplicateEmail(error) ? duplicateEmail() : error
  }
  if (invite === 'email') settings.mailResetLink(row.email, () => settings.issueResetLink(db, row.id))
  return { row, temporaryPassword }
}

export async function updateUser(
  db: Db,
  actor: Actor,
  id: number,
  body: UpdateUserBody,
  settings: AccountSettings,
): Promise<User> {
  return db.transaction().execute(async (trx) => {
    const account = await lockForChange(trx, actor, id)
    if (settings.external) throw managedByProvider('Names and roles cannot be changed here')
    const roles: Role[] = body.roles
    await guardAdministrators(trx, actor, account, { roles })
    const updated = await updateAccount(trx, actor.organizationId, id, {
      first_name: body.firstName,
      last_name: body.lastName,
      roles,
    })
    if (updated) await auditChange(trx, [id])
    return toUser(updated ?? account)
  })
}

/** A JSON Merge Patch of the account: the merged account is checked like a full replacement. */
export async function patchUser(
  db: Db,
  actor: Actor,
  id: number,
  patch: PatchUserBody,
  validate: (merged: unknown) => UpdateUserBody,
  settings: AccountSettings,
): Promise<User> {
  const current = await getUser(db, actor, id)
  const body = validate(applyMergePatch(projectOnto(UpdateUserBody, current), patch))
  return updateUser(db, actor, id, body, settings)
}

/**
 * Deactivates the account and ends all its sessions at once: it can no longer sign in or refresh,
 * and its access tokens stop working within the account cache's interval (30 seconds).
 */
export async function deactivateUser(db: Db, actor: Actor, id: number): Promise<User> {
  return db.transaction().execute(async (trx) => {
    const account = await lockForChange(trx, actor, id)
    if (account.id === actor.userId) {
      throw conflict('You cannot deactivate your own account; another administrator can')
    }
    await guardAdministrators(trx, actor, account, { active: false })
    const updated = account.active
      ? await updateAccount(trx, actor.organizationId, id, { active: false })
      : undefined
    // Its sessions end even if it was inactive already.
    await revokeUserSessions(trx, id, 'DEACTIVATED')
    await auditChange(trx, [id])
    return toUser(updated ?? account)
  })
}

export async function reactivateUser(db: Db, actor: Actor, id: number): Promise<User> {
  return db.transaction().execute(async (trx) => {
    const account = await lockForChange(trx, actor, id)
    if (account.active) return toUser(account)
    const updated = await updateAccount(trx, actor.organizationId, id, { active: true })
    await auditChange(trx, [id])
    return toUser(updated ?? account)
  })
}

/** Mails the account a password-reset link, as if they had asked for one themselves. */
export async function sendPasswordReset(
  db: Db,
  actor: Actor,
  id: number,
  settings: AccountSettings,
): Promise<User> {
  const account = await requireAccount(db, actor, id)
  if (settings.external) throw managedByProvider('Passwords cannot be reset here')
  if (!account.active) throw conflict('The account is deactivated; reactivate it first')
  if (!account.has_password) {
    throw conflict('The account signs in only through an external identity provider: it has no password here')
  }
  // Stored before the answer, with the call's audit record; only the mail goes out after it.
  const link = await db.transaction().execute(async (trx) => {
    const link = await settings.issueResetLink(trx, id)
    await auditChange(trx, [id])
    return link
  })
  settings.mailResetLink(account.email, async () => link)
  return toUser(account)
}
