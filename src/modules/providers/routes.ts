import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, IfMatchHeaders, IfNoneMatchHeaders } from '../../../schemas/common.js'
import {
  CreateProviderBody,
  PatchProviderBody,
  ProviderEnvelope,
  ProviderListQuery,
  ProviderPageEnvelope,
  UpdateProviderBody,
} from '../../../schemas/providers.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
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

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getProvider',
        summary: 'One provider, with weekly hours',
        description: 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.',
        params: IdParams,
        headers: IfNoneMatchHeaders,
        response: { 200: ProviderEnvelope, ...providerErrors },
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
        description:
          'Optional fields left out are cleared (use PATCH to change some fields only). With `If-Match`, only if the provider is still at that version (412 otherwise).',
        params: IdParams,
        headers: IfMatchHeaders,
        body: UpdateProviderBody,
        response: { 200: ProviderEnvelope, ...providerErrors, 409: duplicate },
      },
    },
    async (request) =>
      ok(
        'Provider updated',
        await updateProvider(
          app.db,
          principalOf(request),
          request.params.id,
          request.body,
          request.expectedVersion,
        ),
      ),
  )

  app.patch(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'patchProvider',
        summary: 'Change some fields of a provider (JSON Merge Patch)',
        description: mergePatchDescription(
          '`null` removes an optional one. The merged provider is checked like a full replacement (422). With `If-Match`, only if the provider is still at that version (412 otherwise).',
        ),
        consumes: [MERGE_PATCH],
        params: IdParams,
        headers: IfMatchHeaders,
        body: PatchProviderBody,
        response: { 200: ProviderEnvelope, ...providerErrors, 409: duplicate },
      },
    },
    async (request) => {
      const validate = (merged: unknown) => validMergedBody(request, UpdateProviderBody, merged)
      const provider = await patchProvider(
        app.db,
        principalOf(request),
        request.params.id,
        request.body,
        request.expectedVersion,
        validate,
      )
      return ok('Provider updated', provider)
    },
  )
}

export default providerRoutes
