import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import {
  CreateProviderBody,
  ProviderEnvelope,
  ProviderListQuery,
  ProviderPageEnvelope,
  UpdateProviderBody,
} from '../../../schemas/providers.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { errorResponse } from '../../http/responses.js'
import { notFound, otherOrganization, tags } from './responses.js'
import { createProvider, getProvider, listProviders, updateProvider } from './service.js'

const duplicate = errorResponse(
  409,
  'The NPI is already used in this organization, or the user account is linked to another provider (RES_002)',
)

/** The provider directory: who works here, their identifiers, time zone and weekly hours. */
const providerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listProviders',
        summary: 'List providers of the caller’s organization',
        description:
          'Filters are exact matches (specialty and last name case-insensitive); default sort lastName,asc.',
        querystring: ProviderListQuery,
        response: { 200: ProviderPageEnvelope },
      },
    },
    async (request) =>
      ok('Providers retrieved', await listProviders(app.db, principalOf(request), request.query)),
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getProvider',
        summary: 'One provider, with weekly hours',
        params: IdParams,
        response: { 200: ProviderEnvelope, 403: otherOrganization, 404: notFound },
      },
    },
    async (request) =>
      ok('Provider retrieved', await getProvider(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '',
    {
      schema: {
        tags,
        operationId: 'createProvider',
        summary: 'Add a provider',
        description: 'NPI check digit and time zone are verified (422 VAL_001 otherwise).',
        body: CreateProviderBody,
        response: { 201: ProviderEnvelope, 409: duplicate },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(ok('Provider created', await createProvider(app.db, principalOf(request), request.body))),
  )

  app.put(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'updateProvider',
        summary: 'Replace a provider record',
        params: IdParams,
        body: UpdateProviderBody,
        response: { 200: ProviderEnvelope, 403: otherOrganization, 404: notFound, 409: duplicate },
      },
    },
    async (request) =>
      ok(
        'Provider updated',
        await updateProvider(app.db, principalOf(request), request.params.id, request.body),
      ),
  )
}

export default providerRoutes
