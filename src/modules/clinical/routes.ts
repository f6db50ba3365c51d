import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type Static, type TObject, Type } from '@sinclair/typebox'
import {
  ChartEnvelope,
  ClinicalListQuery,
  EnteredInErrorBody,
  RecordParams,
  recordEnvelopes,
} from '../../../schemas/clinical.js'
import { PatientIdParams } from '../../../schemas/documents.js'
import { ok } from '../../http/envelope.js'
import { principalOf } from '../../http/principal.js'
import { errorResponse } from '../../http/responses.js'
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
} from './service.js'

const tags = ['Clinical records']
const patientRule = errorResponse(
  403,
  'Missing role, or the patient belongs to another organization (AUTH_003)',
)
const noPatient = errorResponse(404, 'No such patient (RES_001)')

type App = Parameters<FastifyPluginAsyncTypebox>[0]

/** The five routes of one kind: create, list, read, correct, withdraw. */
function registerKind<I extends TObject, D extends TObject>(app: App, kind: ClinicalKind<I, D>) {
  const { one, page } = recordEnvelopes(kind.data)
  const collection = `/:patientId/${kind.path}`
  const item = `${collection}/:id`
  const name = kind.label
  const operation = kind.path.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase())
  const suffix = operation[0]?.toUpperCase() + operation.slice(1)
  const missing = errorResponse(404, `No such patient or ${name} (RES_001)`)
  const withdrawn = errorResponse(409, `The ${name} was entered in error (RES_002)`)
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
          403: patientRule,
          404: noPatient,
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
        description: 'Records entered in error are left out unless includeEnteredInError=true.',
        params: PatientIdParams,
        querystring: ListQuery,
        response: { 200: page, 403: patientRule, 404: noPatient },
      },
    },
    async (request) => {
      const result = await listClinicalRecords(
        app.db,
        kind,
        principalOf(request),
        request.params.patientId,
        request.query as Record<string, unknown> & { page: number; size: number },
      )
      request.auditedIds = result.content.map((record) => record.id)
      return ok(`${kind.path} retrieved`, result)
    },
  )

  app.get(
    item,
    {
      schema: {
        tags,
        operationId: `get${suffix}`,
        summary: `One ${name}`,
        params: RecordParams,
        response: { 200: one, 403: patientRule, 404: missing },
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
        description: 'Replaces its fields; the record keeps its id and its version goes up.',
        params: RecordParams,
        body: kind.input,
        response: { 200: one, 403: patientRule, 404: missing, 409: withdrawn },
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
        description: `Clinical records are never deleted: the ${name} is kept, with who withdrew it, when and why, and leaves lists and the chart.`,
        params: RecordParams,
        body: EnteredInErrorBody,
        response: { 200: one, 403: patientRule, 404: missing, 409: withdrawn },
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
        response: { 200: ChartEnvelope, 403: patientRule, 404: noPatient },
      },
    },
    async (request) => {
      const chart = await getChart(app.db, principalOf(request), request.params.patientId)
      request.auditedIds = [request.params.patientId]
      return ok('Chart retrieved', chart)
    },
  )
}

export default clinicalRoutes
