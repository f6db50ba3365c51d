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
import { listPage } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
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

  const clients = recordRoutes(app, {
    tags,
    envelope: ClientEnvelope,
    errors: clientErrors,
    versioned: false,
  })

  clients.get({
    operationId: 'getClient',
    summary: 'One confidential client',
    message: 'Client retrieved',
    read: getClient,
  })

  clients.create({
    operationId: 'createClient',
    summary: 'Register a confidential client',
    description:
      'The client gets a generated `clientId` and a secret, shown only in this response (the service keeps a hash). It obtains tokens with the client_credentials grant at the realm’s token endpoint (`/realms/<realm>/protocol/openid-connect/token`). Registered with public keys (`jwks`, or `jwksUrl`: https, public hosts only) it gets no secret and authenticates with a JWT signed by its private key instead (`private_key_jwt`, SMART Backend Services).',
    body: CreateClientBody,
    response: { 201: ClientWithSecretEnvelope, 409: externalProvider },
    message: 'Client created',
    create: (db, actor, body) => registerClient(db, actor, body, settings),
  })

  clients.putAndPatch({
    message: 'Client updated',
    put: {
      operationId: 'updateClient',
      summary: 'Replace the name, roles and keys of a client',
      description:
        'Roles take effect in the client’s next access token. Without `jwks` or `jwksUrl` the client’s keys are removed (422 for a client without a secret).',
      body: UpdateClientBody,
      replace: (db, actor, id, body) => updateClient(db, actor, id, body, settings),
    },
    patch: {
      operationId: 'patchClient',
      summary: 'Change the name, roles or keys of a client (JSON Merge Patch)',
      description: mergePatchDescription(
        '`roles` and `jwks` replace the whole value; `null` removes `jwks` or `jwksUrl`. The merged client is checked like a full replacement (422).',
      ),
      consumes: [MERGE_PATCH],
      body: PatchClientBody,
      patch: (db, actor, id, patch, _unversioned, validate) =>
        patchClient(db, actor, id, patch, validate, settings),
    },
  })

  clients.change('POST', '/rotate-secret', {
    operationId: 'rotateClientSecret',
    summary: 'Replace the client secret',
    description:
      'The new secret is in the response, once. The previous one keeps working until `previousSecretExpiresAt` (CLIENT_SECRET_OVERLAP_SECONDS after the rotation), so the integration can switch at its own pace; a second rotation within that time retires the oldest secret at once. A client registered with keys only gets its first secret this way.',
    answer: ClientWithSecretEnvelope,
    errors: { 409: externalProvider },
    message: 'Secret rotated',
    change: (db, actor, id) => rotateClientSecret(db, actor, id, settings),
  })

  clients.change('POST', '/deactivate', {
    operationId: 'deactivateClient',
    summary: 'Deactivate a client',
    description:
      'The token endpoint refuses the client from now on (invalid_client), and its access tokens stop working within 30 seconds.',
    message: 'Client deactivated',
    change: deactivateClient,
  })

  clients.change('POST', '/reactivate', {
    operationId: 'reactivateClient',
    summary: 'Reactivate a client',
    description: 'The client obtains tokens again with its current secret.',
    message: 'Client reactivated',
    change: reactivateClient,
  })
}

export default clientRoutes
