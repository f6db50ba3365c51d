import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams } from '../../../schemas/common.js'
import {
  AddendumBody,
  CreateEncounterBody,
  EncounterEnvelope,
  EncounterListQuery,
  EncounterPageEnvelope,
  UpdateEncounterBody,
} from '../../../schemas/encounters.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { errorResponse } from '../../http/responses.js'
import {
  addAddendum,
  createEncounter,
  getEncounter,
  listEncounters,
  signEncounter,
  updateEncounter,
} from './service.js'

const tags = ['Encounters']
const notFound = errorResponse(404, 'No such encounter (RES_001)')
const otherOrganization = errorResponse(
  403,
  'Missing role, or the encounter belongs to another organization (AUTH_003)',
)
const wrongStatus = (description: string) => errorResponse(409, `${description} (RES_002)`)

const encounterRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listEncounters',
        summary: 'List encounters of the caller’s organization',
        description: 'Default sort encounterDate,desc; dateFrom/dateTo compare encounterDate.',
        querystring: EncounterListQuery,
        response: { 200: EncounterPageEnvelope },
      },
    },
    async (request) => {
      const page = await listEncounters(app.db, principalOf(request), request.query)
      request.auditedIds = page.content.map((encounter) => encounter.id)
      return ok('Encounters retrieved', page)
    },
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getEncounter',
        summary: 'One encounter with its addenda',
        params: IdParams,
        response: { 200: EncounterEnvelope, 403: otherOrganization, 404: notFound },
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
          403: errorResponse(
            403,
            'Missing role, or the patient, provider or appointment belongs to another organization (AUTH_003)',
          ),
          404: errorResponse(404, 'No such patient, provider or appointment (RES_001)'),
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
        params: IdParams,
        body: UpdateEncounterBody,
        response: {
          200: EncounterEnvelope,
          403: otherOrganization,
          404: notFound,
          409: wrongStatus('The encounter is signed'),
        },
      },
    },
    async (request) =>
      ok(
        'Encounter updated',
        await updateEncounter(app.db, principalOf(request), request.params.id, request.body),
      ),
  )

  app.post(
    '/:id/sign',
    {
      schema: {
        tags,
        operationId: 'signEncounter',
        summary: 'Sign a draft encounter, locking its note',
        description:
          'Records the caller as signer and the time. When the encounter’s provider is linked to a user account, only that user may sign (403 otherwise).',
        params: IdParams,
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
      ok('Encounter signed', await signEncounter(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '/:id/addendum',
    {
      schema: {
        tags,
        operationId: 'addEncounterAddendum',
        summary: 'Append a signed addendum to a signed encounter',
        params: IdParams,
        body: AddendumBody,
        response: {
          200: EncounterEnvelope,
          403: otherOrganization,
          404: notFound,
          409: wrongStatus('The encounter is still a draft'),
        },
      },
    },
    async (request) =>
      ok('Addendum added', await addAddendum(app.db, principalOf(request), request.params.id, request.body)),
  )
}

export default encounterRoutes
