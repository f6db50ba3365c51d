import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreatedUserEnvelope,
  CreateUserBody,
  PatchUserBody,
  UpdateUserBody,
  UserEnvelope,
  UserListQuery,
  UserPageEnvelope,
} from '../../../schemas/users.js'
import { listPage } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import {
  type AccountSettings,
  deactivateUser,
  getUser,
  inviteUser,
  listUsers,
  patchUser,
  reactivateUser,
  sendPasswordReset,
  updateUser,
} from './service.js'

const tags = ['Users']
const userErrors = recordErrors('account', 'User', 'account of a person')
const externalNote =
  'With an external identity provider (OIDC_ISSUER_URL) the accounts are the provider’s: this answers 409 RES_002.'
const roleConflict = errorResponse(
  409,
  'The change would remove the last active ADMIN of the organization or the caller’s own ADMIN role, or accounts belong to an external identity provider (RES_002)',
  'UserRoleConflict',
)

export interface UserRoutesOptions {
  external: boolean
  /** Password-reset links (the reset flow of /api/auth): stores one for an account, and mails one. */
  resetLinks: {
    issue: AccountSettings['issueResetLink']
    mail: (email: string, link: string) => Promise<void>
  }
}

/** What the account services need, from the routes' options: invitations' mails go out after the response. */
export function accountSettings(
  app: Parameters<FastifyPluginAsyncTypebox>[0],
  { external, resetLinks }: UserRoutesOptions,
): AccountSettings {
  return {
    external,
    issueResetLink: resetLinks.issue,
    // After the response, as for a reset the user asks for.
    mailResetLink: (email, link) =>
      app.background.run('password reset mail', async () => resetLinks.mail(email, await link())),
  }
}

/** Accounts of the people of the caller's organization (service accounts are managed as clients). */
const userRoutes: FastifyPluginAsyncTypebox<UserRoutesOptions> = async (app, options) => {
  const settings = accountSettings(app, options)

  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listUsers',
        summary: 'List the accounts of the caller’s organization',
        description:
          'People only: the service accounts of confidential clients are listed at /api/clients. Default sort lastName,asc.',
        querystring: UserListQuery,
        response: { 200: UserPageEnvelope },
      },
    },
    async (request) => listPage(request, 'Users retrieved', listUsers),
  )

  const users = recordRoutes(app, { tags, envelope: UserEnvelope, errors: userErrors, versioned: false })

  users.get({ operationId: 'getUser', summary: 'One account', message: 'User retrieved', read: getUser })

  users.create({
    operationId: 'createUser',
    summary: 'Add an account',
    description: `The person is mailed a link to choose their password, or gets a temporary password from this response (shown once) that must be changed before the first sign-in. ${externalNote}`,
    body: CreateUserBody,
    response: {
      201: CreatedUserEnvelope,
      409: errorResponse(
        409,
        'An account with this e-mail address already exists, or accounts belong to an external identity provider (RES_002)',
      ),
    },
    message: 'User created',
    create: (db, actor, body) => inviteUser(db, actor, body, settings),
  })

  users.putAndPatch({
    errors: { 409: roleConflict },
    message: 'User updated',
    put: {
      operationId: 'updateUser',
      summary: 'Replace the names and roles of an account',
      description: `The organization keeps at least one active ADMIN, and an administrator cannot remove their own ADMIN role (409). ${externalNote}`,
      body: UpdateUserBody,
      replace: (db, actor, id, body) => updateUser(db, actor, id, body, settings),
    },
    patch: {
      operationId: 'patchUser',
      summary: 'Change the names or roles of an account (JSON Merge Patch)',
      description: mergePatchDescription(
        `\`roles\` replaces the whole list. The merged account is checked like a full replacement (422), and by the same rules as PUT (409). ${externalNote}`,
      ),
      consumes: [MERGE_PATCH],
      body: PatchUserBody,
      patch: (db, actor, id, patch, _unversioned, validate) =>
        patchUser(db, actor, id, patch, validate, settings),
    },
  })

  users.change('POST', '/deactivate', {
    operationId: 'deactivateUser',
    summary: 'Deactivate an account',
    description:
      'Every session of the account ends at once: it can no longer sign in or refresh, and its access tokens stop working within 30 seconds (accounts are cached that long). Refused (409) for the caller’s own account and for the last active ADMIN. Works with an external identity provider too: within 30 seconds the account is refused here, whatever the provider says.',
    errors: {
      409: errorResponse(
        409,
        'The account is the caller’s own or the last active ADMIN of the organization (RES_002)',
      ),
    },
    message: 'User deactivated',
    change: deactivateUser,
  })

  users.change('POST', '/reactivate', {
    operationId: 'reactivateUser',
    summary: 'Reactivate an account',
    description: 'The account can sign in again (its sessions ended at deactivation stay ended).',
    message: 'User reactivated',
    change: reactivateUser,
  })

  users.change('POST', '/reset-password', {
    operationId: 'sendUserPasswordReset',
    summary: 'Mail the account a password-reset link',
    description: `The same mail as POST /api/auth/forgot-password, sent after the response: a single-use link valid 30 minutes. The current password keeps working until the link is used. ${externalNote}`,
    errors: {
      409: errorResponse(
        409,
        'The account is deactivated or has no password here, or accounts belong to an external identity provider (RES_002)',
      ),
    },
    message: 'Password reset mail sent',
    change: (db, actor, id) => sendPasswordReset(db, actor, id, settings),
  })
}

export default userRoutes
