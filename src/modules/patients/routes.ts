import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreatePatientBody,
  PatchPatientBody,
  Patient,
  PatientDeletedEnvelope,
  PatientEnvelope,
  PatientListQuery,
  PatientPageEnvelope,
  PatientSearchPageEnvelope,
  PatientSearchQuery,
  UpdatePatientBody,
} from '../../../schemas/patients.js'
import { listOrSync, listPage } from '../../http/list-or-sync.js'
import { recordRoutes } from '../../http/record-routes.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { versionRoutes } from '../../http/version-routes.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import { toPatient } from './mapper.js'
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

  const patients = recordRoutes(app, { tags, envelope: PatientEnvelope, errors: patientErrors })

  patients.get({
    operationId: 'getPatient',
    summary: 'One patient',
    message: 'Patient retrieved',
    read: getPatient,
  })

  versionRoutes(app, {
    table: 'patients',
    tags,
    name: 'Patient',
    noun: 'patient',
    schema: Patient,
    errors: patientErrors,
    read: getPatient,
    represent: toPatient,
  })

  patients.create({
    operationId: 'createPatient',
    summary: 'Register a patient',
    description: 'Emits patient.created.',
    body: CreatePatientBody,
    response: { 201: PatientEnvelope, 409: duplicate },
    message: 'Patient created',
    create: createPatient,
  })

  patients.putAndPatch({
    errors: { 409: duplicate },
    message: 'Patient updated',
    put: {
      operationId: 'updatePatient',
      summary: 'Replace a patient record',
      description:
        'Optional fields left out are cleared (use PATCH to change some fields only). With `If-Match`, only if the patient is still at that version (412 otherwise). Emits patient.updated.',
      body: UpdatePatientBody,
      replace: updatePatient,
    },
    patch: {
      operationId: 'patchPatient',
      summary: 'Change some fields of a patient (JSON Merge Patch)',
      description: mergePatchDescription(
        '`null` removes an optional one. The merged patient is checked like a full replacement (422). With `If-Match`, only if the patient is still at that version (412 otherwise). Emits patient.updated.',
      ),
      consumes: [MERGE_PATCH],
      body: PatchPatientBody,
      patch: patchPatient,
    },
  })

  patients.change('DELETE', '', {
    operationId: 'deletePatient',
    summary: 'Delete a patient (soft delete)',
    description:
      'The patient disappears from every read and search; the record and its clinical data are retained, and the MRN is never reissued. Emits patient.updated with deleted=true.',
    answer: PatientDeletedEnvelope,
    message: 'Patient deleted',
    change: deletePatient,
  })
}

export default patientRoutes
