import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateProviderBody,
  PatchProviderBody,
  ProviderEnvelope,
  ProviderListQuery,
  ProviderPageEnvelope,
  UpdateProviderBody,
} from '../../../schemas/providers.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { errorResponse } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import { providerErrors, tags } from './route-schemas.js'
import { createProvider, getProvider, listProviders, patchProvider, updateProvider } from './service.js'

const duplicate = errorResponse(
  409,
  'The NPI is already used in this organization, or the user account is linked to another provider (RES_002)',
  'ProviderConflict',
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
          'Filters are exact matches (specialty and last name case-insensitive); default sort lastName,asc. With `updatedSince` or `cursor`, a sync page: providers changed since, oldest change first (providers are never removed, so there are no tombstones).',
        querystring: ProviderListQuery,
        response: { 200: ProviderPageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Providers retrieved', listProviders),
  )

  const providers = recordRoutes(app, { tags, envelope: ProviderEnvelope, errors: providerErrors })

  providers.get({
    operationId: 'getProvider',
    summary: 'One provider, with weekly hours',
    message: 'Provider retrieved',
    read: getProvider,
  })

  providers.create({
    operationId: 'createProvider',
    summary: 'Add a provider',
    description: 'NPI check digit and time zone are verified (422 VAL_001 otherwise).',
    body: CreateProviderBody,
    response: { 201: ProviderEnvelope, 409: duplicate },
    message: 'Provider created',
    create: createProvider,
  })

  providers.putAndPatch({
    errors: { 409: duplicate },
    message: 'Provider updated',
    put: {
      operationId: 'updateProvider',
      summary: 'Replace a provider record',
      description:
        'Optional fields left out are cleared (use PATCH to change some fields only). With `If-Match`, only if the provider is still at that version (412 otherwise).',
      body: UpdateProviderBody,
      replace: updateProvider,
    },
    patch: {
      operationId: 'patchProvider',
      summary: 'Change some fields of a provider (JSON Merge Patch)',
      description: mergePatchDescription(
        '`null` removes an optional one. The merged provider is checked like a full replacement (422). With `If-Match`, only if the provider is still at that version (412 otherwise).',
      ),
      consumes: [MERGE_PATCH],
      body: PatchProviderBody,
      patch: patchProvider,
    },
  })
}

export default providerRoutes
