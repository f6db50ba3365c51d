import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, IfMatchHeaders, IfNoneMatchHeaders } from '../../../schemas/common.js'
import {
  AddendumBody,
  CreateEncounterBody,
  EncounterEnvelope,
  EncounterListQuery,
  EncounterPageEnvelope,
  PatchEncounterBody,
  UpdateEncounterBody,
} from '../../../schemas/encounters.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import {
  addAddendum,
  createEncounter,
  getEncounter,
  listEncounters,
  patchEncounter,
  signEncounter,
  updateEncounter,
} from './service.js'

const tags = ['Encounters']
const encounterErrors = recordErrors('encounter', 'Encounter')
const notFound = encounterErrors[404]
const notTheAuthor = errorResponse(
  403,
  'Missing role, the encounter belongs to another organization, or the caller is neither the encounter’s provider nor an administrator (AUTH_003)',
  'EncounterNotAuthor',
)
const wrongStatus = (description: string, name?: string) =>
  errorResponse(409, `${description} (RES_002)`, name)

const encounterRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listEncounters',
        summary: 'List encounters of the caller’s organization',
        description:
          'Default sort encounterDate,desc; dateFrom/dateTo compare encounterDate. With `updatedSince` or `cursor`, a sync page: encounters changed since (signing and addenda are changes), oldest change first (encounters are never removed, so there are no tombstones).',
        querystring: EncounterListQuery,
        response: { 200: EncounterPageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Encounters retrieved', listEncounters),
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getEncounter',
        summary: 'One encounter with its addenda',
        description: 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.',
        params: IdParams,
        headers: IfNoneMatchHeaders,
        response: { 200: EncounterEnvelope, ...encounterErrors },
      },
    },
    async (request) =>
      ok('Encounter retrieved', await getEncounter(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '',
    {
      schema: {
        tags,
        operationId: 'createEncounter',
        summary: 'Start an encounter (DRAFT)',
        body: CreateEncounterBody,
        response: {
          201: EncounterEnvelope,
          ...recordErrors('patient, provider or appointment'),
          409: wrongStatus('The appointment already has an encounter, or was cancelled or missed'),
        },
      },
    },
    async (request, reply) => {
      const encounter = await createEncounter(app.db, principalOf(request), request.body)
      request.auditedIds = [encounter.id]
      return reply.code(201).send(ok('Encounter created', encounter))
    },
  )

  app.put(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'updateEncounter',
        summary: 'Replace the note of a draft encounter',
        description:
          'Optional fields left out are cleared (use PATCH to change some fields only). When the encounter’s provider is linked to a user account, only that user or an administrator may edit the note (403 otherwise). With `If-Match`, only if the encounter is still at that version (412 otherwise).',
        params: IdParams,
        headers: IfMatchHeaders,
        body: UpdateEncounterBody,
        response: {
          200: EncounterEnvelope,
          403: notTheAuthor,
          404: notFound,
          409: wrongStatus('The encounter is signed', 'EncounterSigned'),
        },
      },
    },
    async (request) =>
      ok(
        'Encounter updated',
        await updateEncounter(
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
        operationId: 'patchEncounter',
        summary: 'Change some fields of a draft encounter’s note (JSON Merge Patch)',
        description: mergePatchDescription(
          '`null` removes an optional one; nested objects of the note merge. The merged note is checked like a full replacement (422). When the encounter’s provider is linked to a user account, only that user or an administrator may edit the note (403 otherwise). With `If-Match`, only if the encounter is still at that version (412 otherwise).',
        ),
        consumes: [MERGE_PATCH],
        params: IdParams,
        headers: IfMatchHeaders,
        body: PatchEncounterBody,
        response: {
          200: EncounterEnvelope,
          403: notTheAuthor,
          404: notFound,
          409: wrongStatus('The encounter is signed', 'EncounterSigned'),
        },
      },
    },
    async (request) => {
      const validate = (merged: unknown) => validMergedBody(request, UpdateEncounterBody, merged)
      const encounter = await patchEncounter(
        app.db,
        principalOf(request),
        request.params.id,
        request.body,
        request.expectedVersion,
        validate,
      )
      return ok('Encounter updated', encounter)
    },
  )

  app.post(
    '/:id/sign',
    {
      schema: {
        tags,
        operationId: 'signEncounter',
        summary: 'Sign a draft encounter, locking its note',
        description:
          'Records the caller as signer and the time. When the encounter’s provider is linked to a user account, only that user may sign (403 otherwise). With `If-Match`, only if the encounter is still at that version (412 otherwise): the signer signs the note as read.',
        params: IdParams,
        headers: IfMatchHeaders,
        response: {
          200: EncounterEnvelope,
          403: errorResponse(
            403,
            'Missing role, the encounter belongs to another organization, or the caller is not the encounter’s provider (AUTH_003)',
          ),
          404: notFound,
          409: wrongStatus('The encounter is already signed'),
        },
      },
    },
    async (request) =>
      ok(
        'Encounter signed',
        await signEncounter(app.db, principalOf(request), request.params.id, request.expectedVersion),
      ),
  )

  app.post(
    '/:id/addendum',
    {
      schema: {
        tags,
        operationId: 'addEncounterAddendum',
        summary: 'Append a signed addendum to a signed encounter',
        description: 'With `If-Match`, only if the encounter is still at that version (412 otherwise).',
        params: IdParams,
        headers: IfMatchHeaders,
        body: AddendumBody,
        response: {
          200: EncounterEnvelope,
          ...encounterErrors,
          409: wrongStatus('The encounter is still a draft'),
        },
      },
    },
    async (request) =>
      ok(
        'Addendum added',
        await addAddendum(
          app.db,
          principalOf(request),
          request.params.id,
          request.body,
          request.expectedVersion,
        ),
      ),
  )
}

export default encounterRoutes
