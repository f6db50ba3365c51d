import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import {
  AppGrantEnvelope,
  AppGrantListQuery,
  AppGrantPageEnvelope,
  CreateSmartAppBody,
  CreateSmartLaunchBody,
  MyAppGrantListQuery,
  PatchSmartAppBody,
  SmartAppEnvelope,
  SmartAppListQuery,
  SmartAppPageEnvelope,
  SmartAppWithSecretEnvelope,
  SmartLaunchEnvelope,
  UpdateSmartAppBody,
} from '../../../schemas/smart-apps.js'
import { ok } from '../../http/envelope.js'
import { listPage } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { recordRoutes } from '../../http/record-routes.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, noSuch, otherOrganization, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import {
  createLaunch,
  deactivateApp,
  getApp,
  getGrant,
  type LaunchSettings,
  listApps,
  listGrants,
  listMyGrants,
  patchApp,
  reactivateApp,
  registerApp,
  revokeGrant,
  revokeMyGrant,
  rotateAppSecret,
  type SmartAppSettings,
} from './service.js'

const appTags = ['SMART apps']
const appErrors = recordErrors('SMART app', 'SmartApp')
const grantErrors = recordErrors('app grant', 'AppGrant')
const externalProvider = errorResponse(
  409,
  'An external identity provider is configured: integrations are registered there (RES_002)',
  'ClientsExternal',
)

/**
 * SMART App Launch on the embedded issuer: the apps a practice registers, what its users granted
 * them, and the EHR launches that open an app in a patient's context.
 */
const smartAppRoutes: FastifyPluginAsyncTypebox<{ settings: SmartAppSettings & LaunchSettings }> = async (
  app,
  { settings },
) => {
  app.get(
    '/smart-apps',
    {
      schema: {
        tags: appTags,
        operationId: 'listSmartApps',
        summary: 'List the SMART apps of the caller’s organization',
        description:
          'Default sort name,asc. A confidential app’s secret is never shown again after creation or rotation.',
        querystring: SmartAppListQuery,
        response: { 200: SmartAppPageEnvelope },
      },
    },
    async (request) => listPage(request, 'SMART apps retrieved', listApps),
  )

  const apps = recordRoutes(app, {
    tags: appTags,
    path: '/smart-apps',
    envelope: SmartAppEnvelope,
    errors: appErrors,
    versioned: false,
  })

  apps.get({
    operationId: 'getSmartApp',
    summary: 'One SMART app',
    message: 'SMART app retrieved',
    read: getApp,
  })

  apps.create({
    operationId: 'createSmartApp',
    summary: 'Register a SMART app',
    description:
      'The app gets a generated, unguessable `clientId`. It signs users in with the authorization code flow and PKCE at the realm’s authorization endpoint, and may ask for at most its `scopes`. A confidential app registered without keys gets a `clientSecret`, shown only in this response (the service keeps a scrypt hash). Redirect URIs and the launch URL must be absolute `https:` URLs (`http:` only on a loopback host), without fragment or user info; scopes must be ones this service grants (`system/` ones never), each unknown one named in the 422.',
    body: CreateSmartAppBody,
    response: { 201: SmartAppWithSecretEnvelope, 409: externalProvider },
    message: 'SMART app created',
    create: (db, actor, body) => registerApp(db, actor, body, settings),
  })

  app.patch(
    '/smart-apps/:id',
    {
      schema: {
        tags: appTags,
        operationId: 'patchSmartApp',
        summary:
          'Change the name, redirect URIs, scopes, launch URL or keys of a SMART app (JSON Merge Patch)',
        description: mergePatchDescription(
          '`redirectUris`, `scopes` and `jwks` replace the whole value; `null` removes `launchUrl`, `jwks` or `jwksUrl`. The merged app is checked like a registration (422).',
        ),
        consumes: [MERGE_PATCH],
        params: IdParams,
        body: PatchSmartAppBody,
        response: { 200: SmartAppEnvelope, ...appErrors },
      },
    },
    async (request) => {
      const validate = (merged: unknown) => validMergedBody(request, UpdateSmartAppBody, merged)
      const patched = await patchApp(
        app.db,
        principalOf(request),
        request.params.id,
        request.body,
        validate,
        settings,
      )
      return ok('SMART app updated', patched)
    },
  )

  apps.change('POST', '/rotate-secret', {
    operationId: 'rotateSmartAppSecret',
    summary: 'Replace a confidential app’s secret',
    description:
      'The new secret is in the response, once; the previous one stops working at once. A confidential app registered with keys only gets its first secret this way. 409 for a public app, which has no secret.',
    answer: SmartAppWithSecretEnvelope,
    errors: {
      409: errorResponse(409, 'A public app, or an external identity provider is configured (RES_002)'),
    },
    message: 'Secret rotated',
    change: (db, actor, id) => rotateAppSecret(db, actor, id, settings),
  })

  apps.change('POST', '/deactivate', {
    operationId: 'deactivateSmartApp',
    summary: 'Deactivate a SMART app',
    description:
      'The authorization and token endpoints refuse the app from now on. Every standing grant to it is revoked and its sessions end: its access tokens stop working within seconds, its refresh tokens at once.',
    message: 'SMART app deactivated',
    change: deactivateApp,
  })

  apps.change('POST', '/reactivate', {
    operationId: 'reactivateSmartApp',
    summary: 'Reactivate a SMART app',
    description:
      'The app may be authorized again. Grants revoked by its deactivation stay revoked: users grant it access anew.',
    message: 'SMART app reactivated',
    change: reactivateApp,
  })

  app.get(
    '/me/app-grants',
    {
      schema: {
        tags: appTags,
        operationId: 'listMyAppGrants',
        summary: 'The caller’s standing grants to SMART apps',
        description:
          'What the caller allowed each app, newest first by default. Not with a token issued to an app (403): a user manages their grants themselves.',
        querystring: MyAppGrantListQuery,
        response: { 200: AppGrantPageEnvelope },
      },
    },
    async (request) => listPage(request, 'App grants retrieved', listMyGrants),
  )

  recordRoutes(app, {
    tags: appTags,
    path: '/me/app-grants',
    envelope: AppGrantEnvelope,
    errors: { 404: noSuch('app grant among yours', 'NotYourAppGrant') },
    versioned: false,
  }).change('DELETE', '', {
    operationId: 'revokeMyAppGrant',
    summary: 'Revoke a grant of the caller’s to a SMART app',
    description:
      'The app’s sessions under the grant end: its access tokens stop working within seconds, its refresh tokens at once. Another user’s grant is 404, as if there were none.',
    message: 'App grant revoked',
    change: revokeMyGrant,
  })

  app.get(
    '/app-grants',
    {
      schema: {
        tags: appTags,
        operationId: 'listAppGrants',
        summary: 'Every standing grant to a SMART app in the caller’s organization',
        description: 'Newest first by default; `userId` and `appId` narrow the list.',
        querystring: AppGrantListQuery,
        response: { 200: AppGrantPageEnvelope },
      },
    },
    async (request) => listPage(request, 'App grants retrieved', listGrants),
  )

  const grants = recordRoutes(app, {
    tags: appTags,
    path: '/app-grants',
    envelope: AppGrantEnvelope,
    errors: grantErrors,
    versioned: false,
  })
  grants.get({
    operationId: 'getAppGrant',
    summary: 'One standing grant to a SMART app',
    message: 'App grant retrieved',
    read: getGrant,
  })
  grants.change('DELETE', '', {
    operationId: 'revokeAppGrant',
    summary: 'Revoke a user’s grant to a SMART app',
    description:
      'The app’s sessions under the grant end: its access tokens stop working within seconds, its refresh tokens at once. A revoked grant is gone (404).',
    message: 'App grant revoked',
    change: revokeGrant,
  })

  app.post(
    '/smart-launches',
    {
      schema: {
        tags: appTags,
        operationId: 'createSmartLaunch',
        summary: 'Open a SMART app in a patient’s context (EHR launch)',
        description:
          'Answers an opaque `launch` value, valid once for 5 minutes, that carries the patient (and encounter) to the app: the app passes it to the authorization endpoint with the `launch` scope. With `appId`, only that app may redeem it, and `launchUrl` is the app’s launch URL with `iss` (the FHIR base URL) and `launch` added. The encounter must be one of the patient’s (422).',
        body: CreateSmartLaunchBody,
        response: {
          201: SmartLaunchEnvelope,
          403: otherOrganization('patient, encounter or app'),
          404: noSuch('patient or app'),
        },
      },
    },
    async (request, reply) => {
      const launch = await createLaunch(app.db, principalOf(request), request.body, settings)
      return reply.code(201).send(ok('Launch created', launch))
    },
  )
}

export default smartAppRoutes
