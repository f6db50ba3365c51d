import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AddendumBody,
  CreateEncounterBody,
  Encounter,
  EncounterEnvelope,
  EncounterListQuery,
  EncounterPageEnvelope,
  PatchEncounterBody,
  UpdateEncounterBody,
} from '../../../schemas/encounters.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { versionRoutes } from '../../http/version-routes.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import {
  addAddendum,
  createEncounter,
  encounterAsOf,
  getEncounter,
  listEncounters,
  patchEncounter,
  signEncounter,
  updateEncounter,
} from './service.js'

const tags = ['Encounters']
const encounterErrors = recordErrors('encounter', 'Encounter')
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

  const encounters = recordRoutes(app, { tags, envelope: EncounterEnvelope, errors: encounterErrors })

  encounters.get({
    operationId: 'getEncounter',
    summary: 'One encounter with its addenda',
    message: 'Encounter retrieved',
    read: getEncounter,
  })

  versionRoutes(app, {
    table: 'encounters',
    tags,
    name: 'Encounter',
    noun: 'encounter',
    schema: Encounter,
    errors: encounterErrors,
    read: getEncounter,
    represent: encounterAsOf,
  })

  encounters.create({
    operationId: 'createEncounter',
    summary: 'Start an encounter (DRAFT)',
    body: CreateEncounterBody,
    response: {
      201: EncounterEnvelope,
      ...recordErrors('patient, provider or appointment'),
      409: wrongStatus('The appointment already has an encounter, or was cancelled or missed'),
    },
    message: 'Encounter created',
    create: createEncounter,
  })

  encounters.putAndPatch({
    errors: { 403: notTheAuthor, 409: wrongStatus('The encounter is signed', 'EncounterSigned') },
    message: 'Encounter updated',
    put: {
      operationId: 'updateEncounter',
      summary: 'Replace the note of a draft encounter',
      description:
        'Optional fields left out are cleared (use PATCH to change some fields only). When the encounter’s provider is linked to a user account, only that user or an administrator may edit the note (403 otherwise). With `If-Match`, only if the encounter is still at that version (412 otherwise).',
      body: UpdateEncounterBody,
      replace: updateEncounter,
    },
    patch: {
      operationId: 'patchEncounter',
      summary: 'Change some fields of a draft encounter’s note (JSON Merge Patch)',
      description: mergePatchDescription(
        '`null` removes an optional one; nested objects of the note merge. The merged note is checked like a full replacement (422). When the encounter’s provider is linked to a user account, only that user or an administrator may edit the note (403 otherwise). With `If-Match`, only if the encounter is still at that version (412 otherwise).',
      ),
      consumes: [MERGE_PATCH],
      body: PatchEncounterBody,
      patch: patchEncounter,
    },
  })

  encounters.change('POST', '/sign', {
    operationId: 'signEncounter',
    summary: 'Sign a draft encounter, locking its note',
    description:
      'Records the caller as signer and the time. When the encounter’s provider is linked to a user account, only that user may sign (403 otherwise). With `If-Match`, only if the encounter is still at that version (412 otherwise): the signer signs the note as read.',
    errors: {
      403: errorResponse(
        403,
        'Missing role, the encounter belongs to another organization, or the caller is not the encounter’s provider (AUTH_003)',
      ),
      409: wrongStatus('The encounter is already signed'),
    },
    message: 'Encounter signed',
    change: signEncounter,
  })

  encounters.changeWithBody('POST', '/addendum', {
    operationId: 'addEncounterAddendum',
    summary: 'Append a signed addendum to a signed encounter',
    description: 'With `If-Match`, only if the encounter is still at that version (412 otherwise).',
    body: AddendumBody,
    errors: { 409: wrongStatus('The encounter is still a draft') },
    message: 'Addendum added',
    change: addAddendum,
  })
}

export default encounterRoutes
