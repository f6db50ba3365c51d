import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { IdParams, IfMatchHeaders, IfNoneMatchHeaders } from '../../../schemas/common.js'
import {
  CreatePatientBody,
  PatchPatientBody,
  PatientDeletedEnvelope,
  PatientEnvelope,
  PatientListQuery,
  PatientPageEnvelope,
  PatientSearchPageEnvelope,
  PatientSearchQuery,
  UpdatePatientBody,
} from '../../../schemas/patients.js'
import { ok } from '../../http/envelope.js'
import { listOrSync, listPage } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import {
  createPatient,
  deletePatient,
  getPatient,
  listPatients,
  patchPatient,
  searchPatients,
  updatePatient,
} from './service.js'

const tags = ['Patients']
const patientErrors = recordErrors('patient', 'Patient')
const duplicate = errorResponse(409, 'The MRN is already used in this organization (RES_002)')

const patientRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '',
    {
      schema: {
        tags,
        operationId: 'listPatients',
        summary: 'List patients of the caller’s organization',
        description:
          'Filters are exact matches (names and e-mail case-insensitive); default sort lastName,asc. With `updatedSince` or `cursor`, a sync page: patients changed since, oldest change first, and tombstones of removed ones.',
        querystring: PatientListQuery,
        response: { 200: PatientPageEnvelope },
      },
    },
    async (request) => listOrSync(request, 'Patients retrieved', listPatients),
  )

  app.get(
    '/search',
    {
      schema: {
        tags,
        operationId: 'searchPatients',
        summary: 'Search patients by name, e-mail, telephone or MRN',
        querystring: PatientSearchQuery,
        response: { 200: PatientSearchPageEnvelope },
      },
    },
    async (request) => listPage(request, 'Patients found', searchPatients),
  )

  app.get(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'getPatient',
        summary: 'One patient',
        description: 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.',
        params: IdParams,
        headers: IfNoneMatchHeaders,
        response: { 200: PatientEnvelope, ...patientErrors },
      },
    },
    async (request) =>
      ok('Patient retrieved', await getPatient(app.db, principalOf(request), request.params.id)),
  )

  app.post(
    '',
    {
      schema: {
        tags,
        operationId: 'createPatient',
        summary: 'Register a patient',
        description: 'Emits patient.created.',
        body: CreatePatientBody,
        response: { 201: PatientEnvelope, 409: duplicate },
      },
    },
    async (request, reply) => {
      const patient = await createPatient(app.db, principalOf(request), request.body)
      request.auditedIds = [patient.id]
      return reply.code(201).send(ok('Patient created', patient))
    },
  )

  app.put(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'updatePatient',
        summary: 'Replace a patient record',
        description:
          'Optional fields left out are cleared (use PATCH to change some fields only). With `If-Match`, only if the patient is still at that version (412 otherwise). Emits patient.updated.',
        params: IdParams,
        headers: IfMatchHeaders,
        body: UpdatePatientBody,
        response: { 200: PatientEnvelope, ...patientErrors, 409: duplicate },
      },
    },
    async (request) =>
      ok(
        'Patient updated',
        await updatePatient(
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
        operationId: 'patchPatient',
        summary: 'Change some fields of a patient (JSON Merge Patch)',
        description: mergePatchDescription(
          '`null` removes an optional one. The merged patient is checked like a full replacement (422). With `If-Match`, only if the patient is still at that version (412 otherwise). Emits patient.updated.',
        ),
        consumes: [MERGE_PATCH],
        params: IdParams,
        headers: IfMatchHeaders,
        body: PatchPatientBody,
        response: { 200: PatientEnvelope, ...patientErrors, 409: duplicate },
      },
    },
    async (request) => {
      const actor = principalOf(request)
      const validate = (merged: unknown) => validMergedBody(request, UpdatePatientBody, merged)
      const patient = await patchPatient(
        app.db,
        actor,
        request.params.id,
        request.body,
        request.expectedVersion,
        validate,
      )
      return ok('Patient updated', patient)
    },
  )

  app.delete(
    '/:id',
    {
      schema: {
        tags,
        operationId: 'deletePatient',
        summary: 'Delete a patient (soft delete)',
        description:
          'The patient disappears from every read and search; the record and its clinical data are retained, and the MRN is never reissued. Emits patient.updated with deleted=true.',
        params: IdParams,
        headers: IfMatchHeaders,
        response: { 200: PatientDeletedEnvelope, ...patientErrors },
      },
    },
    async (request) =>
      ok(
        'Patient deleted',
        await deletePatient(app.db, principalOf(request), request.params.id, request.expectedVersion),
      ),
  )
}

export default patientRoutes
