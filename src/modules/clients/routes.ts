import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ClientEnvelope,
  ClientListQuery,
  ClientPageEnvelope,
  ClientWithSecretEnvelope,
  CreateClientBody,
  PatchClientBody,
  UpdateClientBody,
} from '../../../schemas/clients.js'
import { IdParams } from '../../../schemas/common.js'
import { ok } from '../../http/envelope.js'
import { listPage } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import {
  type ClientSettings,
  deactivateClient,
  getClient,
  listClients,
  patchClient,
  reactivateClient,
  registerClient,
  rotateClientSecret,
  updateClient,
} from './service.js'

const tags = ['Clients']
const clientErrors = recordErrors('client', 'Client')
const externalProvider = errorResponse(
  409,
  'An external identity provider is configured: integrations are registered there (RES_002)',
  'ClientsExternal',
)

/** Confidential clients of the caller's organization: server-to-server integrations and their secrets. */
const clientRoutes: FastifyPluginAsyncTypebox<{ settings: ClientSettings }> = async (app, { settings }) => {
  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listClients',
        summary: 'List the confidential clients of the caller’s organization',
        description: 'Default sort name,asc. Secrets are never shown again after creation or rotation.',
        querystring: ClientListQuery,
        response: { 200: ClientPageEnvelope },
      },
    },
    async (request) => listPage(request, 'Clients retrieved', listClients),
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getClient',
        summary: 'One confidential client',
        params: IdParams,
        response: { 200: ClientEnvelope, ...clientErrors },
      },
    },
    async (request) =>
      ok('Client retrieved', await getClient(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '',
    {
      schema: {
        tags,
        operationId: 'createClient',
        summary: 'Register a confidential client',
        description:
          'The client gets a generated `clientId` and a secret, shown only in this response (the service keeps a hash). It obtains tokens with the client_credentials grant at the realm’s token endpoint (`/realms/<realm>/protocol/openid-connect/token`). Registered with public keys (`jwks`, or `jwksUrl`: https, public hosts only) it gets no secret and authenticates with a JWT signed by its private key instead (`private_key_jwt`, SMART Backend Services).',
        body: CreateClientBody,
        response: { 201: ClientWithSecretEnvelope, 409: externalProvider },
      },
    },
    async (request, reply) => {
      const client = await registerClient(app.db, principalOf(request), request.body, settings)
      request.auditedIds = [client.id]
      return reply.code(201).send(ok('Client created', client))
    },
  )

  app.put(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'updateClient',
        summary: 'Replace the name, roles and keys of a client',
        description:
          'Roles take effect in the client’s next access token. Without `jwks` or `jwksUrl` the client’s keys are removed (422 for a client without a secret).',
        params: IdParams,
        body: UpdateClientBody,
        response: { 200: ClientEnvelope, ...clientErrors },
      },
    },
    async (request) =>
      ok(
        'Client updated',
        await updateClient(app.db, principalOf(request), request.params.id, request.body, settings),
      ),
  )

  app.patch(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'patchClient',
        summary: 'Change the name, roles or keys of a client (JSON Merge Patch)',
        description: mergePatchDescription(
          '`roles` and `jwks` replace the whole value; `null` removes `jwks` or `jwksUrl`. The merged client is checked like a full replacement (422).',
        ),
        consumes: [MERGE_PATCH],
        params: IdParams,
        body: PatchClientBody,
        response: { 200: ClientEnvelope, ...clientErrors },
      },
    },
    async (request) => {
      const validate = (merged: unknown) => validMergedBody(request, UpdateClientBody, merged)
      const client = await patchClient(
        app.db,
        principalOf(request),
        request.params.id,
        request.body,
        validate,
        settings,
      )
      return ok('Client updated', client)
    },
  )

  app.post(
    '/:id/rotate-secret',
    {
      schema: {
        tags,
        operationId: 'rotateClientSecret',
        summary: 'Replace the client secret',
        description:
          'The new secret is in the response, once. The previous one keeps working until `previousSecretExpiresAt` (CLIENT_SECRET_OVERLAP_SECONDS after the rotation), so the integration can switch at its own pace; a second rotation within that time retires the oldest secret at once. A client registered with keys only gets its first secret this way.',
        params: IdParams,
        response: {
          200: ClientWithSecretEnvelope,
          ...clientErrors,
          409: externalProvider,
        },
      },
    },
    async (request) =>
      ok(
        'Secret rotated',
        await rotateClientSecret(app.db, principalOf(request), request.params.id, settings),
      ),
  )

  app.post(
    '/:id/deactivate',
    {
      schema: {
        tags,
        operationId: 'deactivateClient',
        summary: 'Deactivate a client',
        description:
          'The token endpoint refuses the client from now on (invalid_client), and its access tokens stop working within 30 seconds.',
        params: IdParams,
        response: { 200: ClientEnvelope, ...clientErrors },
      },
    },
    async (request) =>
      ok('Client deactivated', await deactivateClient(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '/:id/reactivate',
    {
      schema: {
        tags,
        operationId: 'reactivateClient',
        summary: 'Reactivate a client',
        description: 'The client obtains tokens again with its current secret.',
        params: IdParams,
        response: { 200: ClientEnvelope, ...clientErrors },
      },
    },
    async (request) =>
      ok('Client reactivated', await reactivateClient(app.db, principalOf(request), request.params.id)),
  )
}

export default clientRoutes
