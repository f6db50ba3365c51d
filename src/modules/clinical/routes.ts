import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type Static, type TObject, Type } from '@sinclair/typebox'
import {
  ChartEnvelope,
  ClinicalListQuery,
  EnteredInErrorBody,
  RecordParams,
  RecordPatch,
  recordEnvelopes,
} from '../../../schemas/clinical.js'
import { IfMatchHeaders, IfNoneMatchHeaders } from '../../../schemas/common.js'
import { PatientIdParams } from '../../../schemas/documents.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, noSuch, recordErrors } from '../../http/responses.js'
import { MERGE_PATCH, mergePatchDescription } from '../../plugins/conditional-requests.js'
import type { ClinicalKind } from './kind.js'
import { allergies } from './kinds/allergies.js'
import { conditions } from './kinds/conditions.js'
import { labResults } from './kinds/lab-results.js'
import { medications } from './kinds/medications.js'
import { vitalSigns } from './kinds/vital-signs.js'
import {
  correctRecord,
  createRecord,
  enterInError,
  getChart,
  getRecord,
  listClinicalRecords,
  patchClinicalRecord,
} from './service.js'

const tags = ['Clinical records']
const patientErrors = recordErrors('patient', 'Patient')

type App = Parameters<FastifyPluginAsyncTypebox>[0]

/** The six routes of one kind: create, list, read, correct (whole or by merge patch), withdraw. */
function registerKind<I extends TObject, D extends TObject>(app: App, kind: ClinicalKind<I, D>) {
  const { one, page } = recordEnvelopes(kind.data)
  const collection = `/:patientId/${kind.path}`
  const item = `${collection}/:id`
  const name = kind.label
  const operation = kind.path.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase())
  const suffix = operation[0]?.toUpperCase() + operation.slice(1)
  const kindErrors = { ...patientErrors, 404: noSuch(`patient or ${name}`, `${suffix}NotFound`) }
  const withdrawn = errorResponse(
    409,
    `The ${name} was entered in error (RES_002)`,
    `${suffix}EnteredInError`,
  )
  const patchBody = RecordPatch(kind.input, name)
  const ListQuery = ClinicalListQuery({
    [kind.statusField]: Type.Optional(kind.data.properties[kind.statusField] ?? Type.String()),
    ...kind.listFilters,
  })

  app.post(
    collection,
    {
      schema: {
        tags,
        operationId: `create${suffix}`,
        summary: `Record ${name} for a patient`,
        params: PatientIdParams,
        body: kind.input,
        response: {
          201: one,
          ...patientErrors,
          ...(kind.uniqueness ? { 409: errorResponse(409, `${kind.uniqueness.message} (RES_002)`) } : {}),
        },
      },
    },
    async (request, reply) => {
      const record = await createRecord(
        app.db,
        kind,
        principalOf(request),
        request.params.patientId,
        request.body as Static<I>,
      )
      request.auditedIds = [record.id]
      return reply.code(201).send(ok(`${name} recorded`, record))
    },
  )

  app.get(
    collection,
    {
      schema: {
        tags,
        operationId: `list${suffix}`,
        summary: `A patient's ${kind.path}, newest first`,
        description:
          'Records entered in error are left out unless includeEnteredInError=true. With `updatedSince` or `cursor`, a sync page: records created, corrected or entered in error since, oldest change first (withdrawn ones included, with `enteredInError` set).',
        params: PatientIdParams,
        querystring: ListQuery,
        response: { 200: page, ...patientErrors },
      },
    },
    async (request) => {
      const { patientId } = request.params
      return listOrSync(request, `${kind.path} retrieved`, (db, actor, query) =>
        listClinicalRecords(db, kind, actor, patientId, query),
      )
    },
  )

  app.get(
    item,
    {
      schema: {
        tags,
        operationId: `get${suffix}`,
        summary: `One ${name}`,
        description: 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.',
        params: RecordParams,
        headers: IfNoneMatchHeaders,
        response: { 200: one, ...kindErrors },
      },
    },
    async (request) => {
      const { patientId, id } = request.params
      request.auditedIds = [id]
      return ok(`${name} retrieved`, await getRecord(app.db, kind, principalOf(request), patientId, id))
    },
  )

  app.put(
    item,
    {
      schema: {
        tags,
        operationId: `correct${suffix}`,
        summary: `Correct a ${name}`,
        description:
          'Replaces its fields (optional ones left out are cleared; use PATCH to change some fields only); the record keeps its id and its version goes up. With `If-Match`, only if the record is still at that version (412 otherwise).',
        params: RecordParams,
        headers: IfMatchHeaders,
        body: kind.input,
        response: { 200: one, ...kindErrors, 409: withdrawn },
      },
    },
    async (request) => {
      const { patientId, id } = request.params
      request.auditedIds = [id]
      const record = await correctRecord(
        app.db,
        kind,
        principalOf(request),
        patientId,
        id,
        request.body as Static<I>,
        request.expectedVersion,
      )
      return ok(`${name} corrected`, record)
    },
  )

  app.patch(
    item,
    {
      schema: {
        tags,
        operationId: `patch${suffix}`,
        summary: `Correct some fields of a ${name} (JSON Merge Patch)`,
        description: mergePatchDescription(
          '`null` removes an optional one. The merged record is checked like a full correction (422) and is one: its version goes up. With `If-Match`, only if the record is still at that version (412 otherwise).',
        ),
        consumes: [MERGE_PATCH],
        params: RecordParams,
        headers: IfMatchHeaders,
        body: patchBody,
        response: { 200: one, ...kindErrors, 409: withdrawn },
      },
    },
    async (request) => {
      const { patientId, id } = request.params
      request.auditedIds = [id]
      const validate = (merged: unknown) => validMergedBody(request, kind.input, merged) as Static<I>
      const record = await patchClinicalRecord(
        app.db,
        kind,
        principalOf(request),
        patientId,
        id,
        request.body,
        request.expectedVersion,
        validate,
      )
      return ok(`${name} corrected`, record)
    },
  )

  app.post(
    `${item}/entered-in-error`,
    {
      schema: {
        tags,
        operationId: `withdraw${suffix}`,
        summary: `Mark a ${name} as entered in error`,
        description: `Clinical records are never deleted: the ${name} is kept, with who withdrew it, when and why, and leaves lists and the chart; its version goes up. With \`If-Match\`, only if the ${name} is still at that version (412 otherwise).`,
        params: RecordParams,
        headers: IfMatchHeaders,
        body: EnteredInErrorBody,
        response: { 200: one, ...kindErrors, 409: withdrawn },
      },
    },
    async (request) => {
      const { patientId, id } = request.params
      request.auditedIds = [id]
      const record = await enterInError(
        app.db,
        kind,
        principalOf(request),
        patientId,
        id,
        request.body.reason,
        request.expectedVersion,
      )
      return ok(`${name} entered in error`, record)
    },
  )
}

const clinicalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  registerKind(app, vitalSigns)
  registerKind(app, labResults)
  registerKind(app, conditions)
  registerKind(app, allergies)
  registerKind(app, medications)

  app.get(
    '/:patientId/chart',
    {
      schema: {
        tags,
        operationId: 'getChart',
        summary: "A patient's chart at a glance",
        description:
          'Latest vital signs, active conditions, active allergies, active medications and the 10 latest lab results, in one query.',
        params: PatientIdParams,
        response: { 200: ChartEnvelope, ...patientErrors },
      },
    },
    async (request) => {
      const chart = await getChart(app.readDb(request), principalOf(request), request.params.patientId)
      request.auditedIds = [request.params.patientId]
      return ok('Chart retrieved', chart)
    },
  )
}

export default clinicalRoutes
