import type { OperationOutcome, Resource } from '@medplum/fhirtypes'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { RouteKey } from '../../access/route-access.js'
import type { ScopeInteraction } from '../../access/smart-scopes.js'
import { AppError, type FieldProblems, forbidden, preconditionFailed, withFields } from '../../errors.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { applyJsonPatch, patchOperations } from '../../lib/json-patch.js'
import type { ExpectedVersion } from '../../lib/versions.js'
import { toAppError } from '../../plugins/error-handler.js'
import { accessOf, typeGrant } from './access.js'
import { recordId } from './record-id.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import type { ResourceWrites } from './resource-writes.js'
import { COMMON_SEARCH_PARAMETERS } from './search-conditions.js'
import { type SearchQuery, searchQueryOf } from './search-params.js'
import { droppedElements } from './stored-elements.js'
import { baseValidationErrors } from './validation/base-validation.js'

export const JSON_PATCH = 'application/json-patch+json'

interface WriteRouteOptions {
  base: string
  requireIfMatch: boolean
  send(reply: FastifyReply, status: number, body: Resource | undefined): FastifyReply
}

type Written = Resource & { id: string }

/** A write's 422 whose fields are FHIRPath expressions, each an issue of its OperationOutcome. */
const invalidElements = (fields: FieldProblems, details?: string) =>
  new AppError('VAL_001', details ?? fields.map((field) => `${field.path} ${field.message}`).join('; '), {
    fields,
  })

const badRequest = (details: string) => new AppError('VAL_001', details, { status: 400 })

/** The version `If-Match` names (`W/"3"`), undefined without one; a malformed one is 400. */
function ifMatchVersion(request: FastifyRequest, requireIfMatch: boolean): ExpectedVersion {
  const header = request.headers['if-match']
  if (header === undefined) {
    if (!requireIfMatch) return undefined
    throw new AppError(
      'RES_003',
      'This service requires If-Match on writes: send the ETag of the record as you read it',
      {
        status: 428,
        message: 'Precondition required',
      },
    )
  }
  const version = /^(?:W\/)?"([1-9][0-9]{0,8})"$/.exec(header.trim())?.[1]
  if (version === undefined) throw badRequest('If-Match must be an ETag as the server sent it: W/"<version>"')
  return Number(version)
}

/** What `Prefer: return=` asks a write to answer with: the resource unless said otherwise. */
function preferredReturn(request: FastifyRequest): 'minimal' | 'representation' | 'OperationOutcome' {
  const asked = /return\s*=\s*"?(minimal|representation|OperationOutcome)"?/i.exec(
    String(request.headers.prefer ?? ''),
  )?.[1]
  if (asked === 'minimal') return 'minimal'
  return asked?.toLowerCase() === 'operationoutcome' ? 'OperationOutcome' : 'representation'
}

const informational = (diagnostics: string): OperationOutcome => ({
  resourceType: 'OperationOutcome',
  issue: [{ severity: 'information', code: 'informational', diagnostics }],
})

/** The REST fields a domain rule names (a 422, a duplicate's 409), as the FHIRPath of their elements. */
function asElements(error: unknown, writes: ResourceWrites<Resource>, type: string): unknown {
  if (!(error instanceof AppError) || !error.fields) return error
  const expressionOf = (path: string) => {
    const prefixes = Object.keys(writes.fieldExpressions)
      .filter((field) => path === field || path.startsWith(`${field}.`))
      .sort((a, b) => b.length - a.length)
    return prefixes[0] === undefined ? type : (writes.fieldExpressions[prefixes[0]] as string)
  }
  return withFields(
    error,
    error.fields.map(({ path, message }) => ({ path: expressionOf(path), message })),
  )
}

/**
 * FHIR create, update, patch and delete of one type, conditional ones included, each through the
 * domain service of the type's REST routes (ResourceWrites): under their roles (then the token's
 * SMART write scopes) and their audit rule, with the same events and versions.
 */
export function writeRoutes(
  app: FastifyInstance,
  type: FhirResourceType,
  writes: ResourceWrites<Resource>,
  options: WriteRouteOptions,
): void {
  const { base, send } = options
  const criteriaNames = new Set(
    [...COMMON_SEARCH_PARAMETERS, ...type.searchParameters].map(({ name }) => name),
  )

  /** The caller, allowed by role and scope to do `interaction`, and the patient its scopes keep it to. */
  async function writeScope(request: FastifyRequest, interaction: ScopeInteraction): Promise<ReadScope> {
    const actor = request.principal ?? (await app.authenticate(request))
    const grant = typeGrant(actor, type, interaction)
    if (!grant.allowed) throw forbidden(grant.reason)
    if (grant.categories !== undefined) throw forbidden(`Category scopes do not allow writing ${type.type}`)
    const patient = grant.patient === undefined ? undefined : Number(grant.patient)
    return { actor, patient }
  }

  /** A resource a `patient/` scope may write: one in its launch patient's compartment. */
  function checkCompartment(scope: ReadScope, resource: Resource) {
    if (scope.patient === undefined) return
    if (writes.patientOf(resource) !== scope.patient) {
      throw forbidden('The token is limited to its launch patient’s records')
    }
  }

  /** The body sent, as a resource of this type. */
  function sentResource(request: FastifyRequest): Resource {
    const body = request.body as Resource | undefined
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw badRequest(`The body must be a FHIR ${type.type} resource (JSON)`)
    }
    if (body.resourceType !== type.type) {
      throw badRequest(`The body is a ${String(body.resourceType)}, not a ${type.type} as the URL says`)
    }
    return body
  }

  /**
   * The REST body the resource stands for, once it is valid against the R4 base definitions, the
   * REST body's own schema and rules, and the service keeps every element of it (422 otherwise,
   * naming each element at fault).
   */
  async function bodyOf(request: FastifyRequest, resource: Resource): Promise<unknown> {
    const errors = await baseValidationErrors(resource)
    if (errors.length > 0) {
      throw invalidElements(
        errors.map((issue) => ({
          path: issue.expression?.[0] ?? type.type,
          message: issue.details?.text ?? issue.diagnostics ?? 'is not valid',
        })),
      )
    }
    let body: unknown
    try {
      body = validMergedBody(request, writes.bodySchema, writes.bodyOf(resource))
    } catch (error) {
      throw asElements(toAppError(error, 0) ?? error, writes, type.type)
    }
    const dropped = droppedElements(resource, writes.preview(body))
    if (dropped.length > 0) {
      throw invalidElements(
        dropped.map((path) => ({ path, message: 'cannot be stored by this server' })),
        `Elements this server cannot store: ${dropped.join(', ')}`,
      )
    }
    return body
  }

  /** Runs a service write, its domain rules' 422s naming FHIR elements. */
  async function serviceWrite<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write()
    } catch (error) {
      throw asElements(error, writes, type.type)
    }
  }

  /** The records of this type a conditional write's criteria match: none, one, or several (412). */
  async function matching(
    scope: ReadScope,
    criteria: SearchQuery,
    header: string,
  ): Promise<Written | undefined> {
    const names = Object.keys(criteria)
    if (names.length === 0) throw badRequest(`${header} needs search criteria`)
    const unknown = names.filter((name) => !criteriaNames.has(name))
    if (unknown.length > 0) throw badRequest(`${header}: unknown search parameters ${unknown.join(', ')}`)
    const page = await type.search(app.db, scope, criteria, {
      after: undefined,
      size: 2,
      order: { name: '_id', descending: false },
    })
    if (page.resources.length > 1) {
      throw new AppError('RES_003', `${header} matches more than one ${type.type}`, { status: 412 })
    }
    return page.resources[0]
  }

  /** A written resource, as `Prefer` asks, with its ETag, time and (on a create) location. */
  function answer(request: FastifyRequest, reply: FastifyReply, status: number, resource: Written) {
    const version = resource.meta?.versionId
    reply.header('etag', `W/"${version}"`)
    if (resource.meta?.lastUpdated)
      reply.header('last-modified', new Date(resource.meta.lastUpdated).toUTCString())
    reply.header('location', `${base}/${type.type}/${resource.id}/_history/${version}`)
    const preferred = preferredReturn(request)
    if (preferred === 'minimal') return send(reply, status, undefined)
    if (preferred === 'OperationOutcome') {
      const done = status === 201 ? 'created' : 'written'
      return send(reply, status, informational(`${type.type}/${resource.id} ${done} at version ${version}`))
    }
    return send(reply, status, resource)
  }

  async function create(request: FastifyRequest, reply: FastifyReply, scope: ReadScope, resource: Resource) {
    checkCompartment(scope, resource)
    const body = await bodyOf(request, resource)
    const created = await serviceWrite(() => writes.create(app.db, scope.actor, body))
    request.auditedIds = [Number(created.id)]
    return answer(request, reply, 201, created)
  }

  async function update(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: ReadScope,
    current: Written,
    resource: Resource,
    expected: ExpectedVersion,
  ) {
    if (resource.id !== current.id) {
      throw badRequest(`The body's id (${String(resource.id)}) is not the id of ${type.type}/${current.id}`)
    }
    checkCompartment(scope, current)
    checkCompartment(scope, resource)
    const body = await bodyOf(request, resource)
    const id = Number(current.id)
    const updated = await serviceWrite(() => writes.update(app.db, scope.actor, id, body, expected))
    return answer(request, reply, 200, updated)
  }

  async function remove(
    request: FastifyRequest,
    reply: FastifyReply,
    scope: ReadScope,
    id: number,
    deleteRecord: NonNullable<ResourceWrites<Resource>['delete']>,
  ) {
    let current: Written
    try {
      current = await type.read(app.db, scope, id)
    } catch (error) {
      // Deleting what is already deleted changes nothing.
      if (error instanceof AppError && error.status === 410) return send(reply, 204, undefined)
      throw error
    }
    checkCompartment(scope, current)
    await deleteRecord(app.db, scope.actor, id, ifMatchVersion(request, options.requireIfMatch))
    return send(reply, 204, undefined)
  }

  const access = (route: RouteKey, changeStatus: number) => ({
    config: { access: accessOf(route), changeStatus },
  })
  const route = { schema: { hide: true } }
  const byId = `/${type.type}/:id`
  const recordOf = async (scope: ReadScope, text: string) =>
    type.read(app.db, scope, recordId(text, type.type))

  app.post(`/${type.type}`, { ...route, ...access(writes.rest.create, 201) }, async (request, reply) => {
    const scope = await writeScope(request, 'create')
    const resource = sentResource(request)
    const condition = request.headers['if-none-exist']
    if (typeof condition === 'string') {
      const found = await matching(
        scope,
        searchQueryOf(Object.fromEntries(new URLSearchParams(condition))),
        'If-None-Exist',
      )
      if (found) {
        request.auditedIds = [Number(found.id)]
        return answer(request, reply, 200, found)
      }
    }
    return create(request, reply, scope, resource)
  })

  app.put<{ Params: { id: string } }>(
    byId,
    { ...route, ...access(writes.rest.update, 200) },
    async (request, reply) => {
      const scope = await writeScope(request, 'update')
      const resource = sentResource(request)
      const current = await recordOf(scope, request.params.id)
      return update(request, reply, scope, current, resource, ifMatchVersion(request, options.requireIfMatch))
    },
  )

  // Conditional update: the one match is updated; none, the resource is created.
  app.put(`/${type.type}`, { ...route, ...access(writes.rest.update, 200) }, async (request, reply) => {
    const scope = await writeScope(request, 'update')
    const resource = sentResource(request)
    const criteria = searchQueryOf(request.query as Record<string, unknown>)
    const found = await matching(scope, criteria, 'A conditional update')
    if (found) {
      const sent = resource.id === undefined ? { ...resource, id: found.id } : resource
      return update(request, reply, scope, found, sent, ifMatchVersion(request, options.requireIfMatch))
    }
    if (resource.id !== undefined) {
      throw badRequest(`No ${type.type} matches, and a new one cannot take the id ${resource.id}`)
    }
    return create(request, reply, await writeScope(request, 'create'), resource)
  })

  app.patch<{ Params: { id: string } }>(
    byId,
    { ...route, ...access(writes.rest.update, 200) },
    async (request, reply) => {
      const scope = await writeScope(request, 'update')
      if (!String(request.headers['content-type'] ?? '').startsWith(JSON_PATCH)) {
        throw new AppError('VAL_001', `PATCH takes a JSON Patch (${JSON_PATCH})`, { status: 415 })
      }
      const current = await recordOf(scope, request.params.id)
      let patched: Resource
      try {
        patched = applyJsonPatch(current, patchOperations(request.body))
      } catch (error) {
        throw error instanceof AppError
          ? new AppError('VAL_001', `JSON Patch: ${error.details}`, { fields: error.fields ?? [] })
          : error
      }
      if (patched?.resourceType !== type.type)
        throw invalidElements([{ path: type.type, message: 'the patch changed resourceType' }])
      // Without If-Match, the patch applies to the version read: a change in between is 412.
      const expected = ifMatchVersion(request, options.requireIfMatch) ?? Number(current.meta?.versionId)
      if (Number(current.meta?.versionId) !== expected)
        throw preconditionFailed(Number(current.meta?.versionId))
      return update(request, reply, scope, current, patched, expected)
    },
  )

  const { delete: deleteRecord } = writes
  const deleteRoute = writes.rest.delete
  if (!deleteRecord || !deleteRoute) return

  app.delete<{ Params: { id: string } }>(
    byId,
    { ...route, ...access(deleteRoute, 204) },
    async (request, reply) => {
      const scope = await writeScope(request, 'delete')
      return remove(request, reply, scope, recordId(request.params.id, type.type), deleteRecord)
    },
  )

  // Conditional delete: the one match is deleted; none, nothing is.
  app.delete(`/${type.type}`, { ...route, ...access(deleteRoute, 204) }, async (request, reply) => {
    const scope = await writeScope(request, 'delete')
    const criteria = searchQueryOf(request.query as Record<string, unknown>)
    const found = await matching(scope, criteria, 'A conditional delete')
    if (!found) return send(reply, 204, undefined)
    request.auditedIds = [Number(found.id)]
    return remove(request, reply, scope, Number(found.id), deleteRecord)
  })
}
