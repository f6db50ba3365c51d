import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  OrganizationEnvelope,
  PatchOrganizationBody,
  UpdateOrganizationBody,
} from '../../../schemas/organizations.js'
import { recordRoutes } from '../../http/record-routes.js'
import { errorResponse } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import { getOrganization, patchOrganization, updateOrganization } from './service.js'

/** The practice's own details (NPI, phone, e-mail, address): its FHIR Organization and Location. */
const organizationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const organizations = recordRoutes(app, {
    tags: ['Organization'],
    envelope: OrganizationEnvelope,
    // Another organization is no organization of the caller's: 404, as in FHIR.
    errors: {
      404: errorResponse(
        404,
        'No such organization among yours: only your own (RES_001)',
        'OrganizationNotFound',
      ),
    },
  })

  organizations.get({
    operationId: 'getOrganization',
    summary: 'The caller’s organization (the practice) and its details',
    description: 'Only the caller’s own organization: another id is 404.',
    message: 'Organization retrieved',
    read: getOrganization,
  })

  organizations.putAndPatch({
    message: 'Organization updated',
    put: {
      operationId: 'updateOrganization',
      summary: 'Replace the practice’s details',
      description:
        'NPI check digit verified (422 VAL_001 otherwise). Optional fields left out are cleared (use PATCH to change some only). With `If-Match`, only if the organization is still at that version (412 otherwise).',
      body: UpdateOrganizationBody,
      replace: updateOrganization,
    },
    patch: {
      operationId: 'patchOrganization',
      summary: 'Change some of the practice’s details (JSON Merge Patch)',
      description: mergePatchDescription(
        '`null` removes an optional one. The merged record is checked like a full replacement (422). With `If-Match`, only if the organization is still at that version (412 otherwise).',
      ),
      consumes: [MERGE_PATCH],
      body: PatchOrganizationBody,
      patch: patchOrganization,
    },
  })
}

export default organizationRoutes
