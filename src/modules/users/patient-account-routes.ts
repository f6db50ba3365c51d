import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PatientIdParams } from '../../../schemas/documents.js'
import {
  CreatedPatientAccountEnvelope,
  PatientAccountBody,
  PatientAccountEnvelope,
} from '../../../schemas/patient-accounts.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, otherOrganization } from '../../http/responses.js'
import { deactivatePatientAccount, getPatientAccount, invitePatient } from './patient-accounts.js'
import { accountSettings, type UserRoutesOptions } from './routes.js'

const tags = ['Patient accounts']
const forbidden = otherOrganization('patient', 'PatientForbidden')
const noAccount = errorResponse(
  404,
  'No such patient, or the patient has no account (RES_001)',
  'PatientAccountNotFound',
)

/**
 * A patient's own account, managed from the patient's record: invited, shown, deactivated. Its
 * tokens read only the patient's own compartment, through FHIR (src/modules/fhir/scopes.ts).
 */
const patientAccountRoutes: FastifyPluginAsyncTypebox<UserRoutesOptions> = async (app, options) => {
  const settings = accountSettings(app, options)
  app.post(
    '/:patientId/account',
    {
      schema: {
        tags,
        operationId: 'invitePatient',
        summary: 'Give a patient their own account',
        description:
          'A PERSON account holding only the role PATIENT, linked to the patient, in the caller’s organization, named as the patient is. The patient chooses a password as an invited person does (a mailed link by default, or a temporary password from this response) and then signs in; their tokens reach no /api route but GET /api/auth/me, and through FHIR (/fhir/R4) read only their own records, whatever scopes they carry. A deleted patient cannot be invited (404). With an external identity provider (OIDC_ISSUER_URL) the accounts are the provider’s: this answers 409 RES_002.',
        params: PatientIdParams,
        body: PatientAccountBody,
        response: {
          201: CreatedPatientAccountEnvelope,
          403: forbidden,
          404: errorResponse(404, 'No such patient (RES_001)', 'PatientNotFound'),
          409: errorResponse(
            409,
            'The patient already has an account (active or not), the e-mail address is taken, or accounts belong to an external identity provider (RES_002)',
          ),
        },
      },
    },
    async (request, reply) => {
      const account = await invitePatient(
        app.db,
        principalOf(request),
        request.params.patientId,
        request.body,
        settings,
      )
      request.auditedIds = [account.id]
      return reply.code(201).send(ok('Patient account created', account))
    },
  )

  app.get(
    '/:patientId/account',
    {
      schema: {
        tags,
        operationId: 'getPatientAccount',
        summary: 'A patient’s account',
        params: PatientIdParams,
        response: { 200: PatientAccountEnvelope, 403: forbidden, 404: noAccount },
      },
    },
    async (request) => {
      const account = await getPatientAccount(app.db, principalOf(request), request.params.patientId)
      request.auditedIds = [account.id]
      return ok('Patient account retrieved', account)
    },
  )

  app.delete(
    '/:patientId/account',
    {
      schema: {
        tags,
        operationId: 'deactivatePatientAccount',
        summary: 'Deactivate a patient’s account',
        description:
          'As POST /api/users/{id}/deactivate: every session of the account ends at once, and its access tokens stop working within 30 seconds (accounts are cached that long). The account is kept, deactivated: an administrator may reactivate it (POST /api/users/{id}/reactivate). Works for a deleted patient’s account too.',
        params: PatientIdParams,
        response: { 200: PatientAccountEnvelope, 403: forbidden, 404: noAccount },
      },
    },
    async (request) => {
      const account = await deactivatePatientAccount(app.db, principalOf(request), request.params.patientId)
      request.auditedIds = [account.id]
      return ok('Patient account deactivated', account)
    },
  )
}

export default patientAccountRoutes
