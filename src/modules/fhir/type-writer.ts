import type { Resource } from '@medplum/fhirtypes'
import type { FastifyRequest } from 'fastify'
import type { Db } from '../../../db/database.js'
import { hasAnyRole } from '../../access/roles.js'
import type { RouteKey } from '../../access/route-access.js'
import type { ScopeInteraction } from '../../access/smart-scopes.js'
import { auditChangeAs } from '../../audit/change-audit.js'
import { AppError, forbidden, invalidFields, preconditionFailed, withFields } from '../../errors.js'
import { validMergedBody } from '../../http/merge-patch-body.js'
import { principalOf } from '../../http/request-principal.js'
import type { Principal } from '../../identity/principal.js'
import { applyJsonPatch, patchOperations } from '../../lib/json-patch.js'
import type { ExpectedVersion } from '../../lib/versions.js'
import { toAppError } from '../../plugins/error-handler.js'
import { accessOf, typeGrant } from './access.js'
import { recordId } from './record-id.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import type { ResourceWrites } from './resource-writes.js'
import { COMMON_SEARCH_PARAMETERS } from './search-conditions.js'
import type { SearchQuery } from './search-params.js'
import { droppedElements } from './stored-elements.js'
import { baseValidationErrors } from './validation/base-validation.js'

type Written = Resource & { id: string }

/** One write: by whom, through which handle, and its `If-Match`. */
export interface WriteCall {
  /** The database, or the transaction of a transaction Bundle. */
  db: Db
  principal: Principal
  /** The call being served: its validator compiler checks REST bodies as the REST routes do. */
  request: FastifyRequest
  ifMatch: string | undefined
}

/** What a write did: its status and the resource as it now reads (none for a delete). */
export interface WriteResult {
  status: 200 | 201 | 204
  resource?: Written
}

/** Whom a write is for: the caller, whose roles the service's rules may ask for too (who edits a note). */
interface WriteScope extends ReadScope {
  actor: Principal
}

/**
 * What the checks of a resource found (checksOf): the writes of its kind, if it is of one, and the
 * REST body it stands for, or why it is refused; a refusal for its R4 errors or its kind comes
 * before the kind's roles are asked for.
 */
type Checked = { kind?: ResourceWrites<Resource> } & (
  | { body: unknown }
  | { refusal: unknown; beforeAdmission?: true }
)

export const badRequest = (details: string) => new AppError('VAL_001', details, { status: 400 })

/** The 422 naming each element the R4 base definitions of its type refuse; none for a valid resource. */
async function baseDefinitionsRefusal(resource: Resource) {
  const errors = await baseValidationErrors(resource)
  if (errors.length === 0) return undefined
  return invalidFields(
    errors.map((issue) => ({
      path: issue.expression?.[0] ?? resource.resourceType,
      message: issue.details?.text ?? issue.diagnostics ?? 'is not valid',
    })),
  )
}

/** A resource valid against the R4 base definitions of its type; a 422 naming each element at fault otherwise. */
export async function checkBaseDefinitions(resource: Resource): Promise<void> {
  const refusal = await baseDefinitionsRefusal(resource)
  if (refusal) throw refusal
}

/** The REST fields a domain rule names (a 422, a duplicate's 409), as the FHIRPath of their elements. */
function asElements(error: unknown, writes: ResourceWrites<Resource>, type: string): unknown {
  if (!(error instanceof AppError) || !error.fields) return error
  const expressionOf = (path: string) => {
    // Named as an element already (a preview's refusal).
    if (path === type || path.startsWith(`${type}.`)) return path
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
 * domain service of the type's REST routes (ResourceWrites): under their roles, then the token's
 * SMART write scopes, with the same rules, events and versions. Used by the type's routes and by
 * the entries of batch and transaction Bundles.
 */
export function typeWriter(
  type: FhirResourceType,
  writes: ResourceWrites<Resource>,
  { requireIfMatch }: { requireIfMatch: boolean },
) {
  const criteriaNames = new Set(
    [...COMMON_SEARCH_PARAMETERS, ...type.searchParameters].map(({ name }) => name),
  )

  /** The caller, allowed by role and scope to do `interaction`, and the patient its scopes keep it to. */
  function writeScope(principal: Principal, interaction: ScopeInteraction): WriteScope {
    const grant = typeGrant(principal, type, interaction)
    if (!grant.allowed) throw forbidden(grant.reason)
    if (grant.categories !== undefined) throw forbidden(`Category scopes do not allow writing ${type.type}`)
    const patient = grant.patient === undefined ? undefined : Number(grant.patient)
    return { actor: principal, patient }
  }

  /** A resource a `patient/` scope may write: one in its launch patient's compartment. */
  function checkCompartment(scope: WriteScope, resource: Resource) {
    if (scope.patient === undefined) return
    if (writes.patientOf(resource) !== scope.patient) {
      throw forbidden('The token is limited to its launch patient’s records')
    }
  }

  /** The version `If-Match` names (`W/"3"`), undefined without one; a malformed one is 400. */
  function expectedVersion(call: WriteCall): ExpectedVersion {
    if (call.ifMatch === undefined) {
      if (!requireIfMatch) return undefined
      throw new AppError(
        'RES_003',
        'This service requires If-Match on writes: send the ETag of the record as you read it',
        { status: 428, message: 'Precondition required' },
      )
    }
    const version = /^(?:W\/)?"([1-9][0-9]{0,8})"$/.exec(call.ifMatch.trim())?.[1]
    if (version === undefined) {
      throw badRequest('If-Match must be an ETag as the server sent it: W/"<version>"')
    }
    return Number(version)
  }

  /** What was sent, as a resource of this type. */
  function sentResource(sent: unknown): Resource {
    if (typeof sent !== 'object' || sent === null || Array.isArray(sent)) {
      throw badRequest(`The body must be a FHIR ${type.type} resource (JSON)`)
    }
    const resource = sent as Resource
    if (resource.resourceType !== type.type) {
      throw badRequest(`The body is a ${String(resource.resourceType)}, not a ${type.type} as the URL says`)
    }
    return resource
  }

  /**
   * The writes of the kind of record a resource is (ResourceWrites.kindOf), under the roles and the
   * audit rule of that kind's REST route for `interaction`; the type's own for a type of one kind.
   */
  function kindWrites(
    call: WriteCall,
    interaction: 'create' | 'update' | 'delete',
    resource: Resource,
    current?: Written,
  ): ResourceWrites<Resource> {
    const kind = writes.kindOf?.(resource, current)
    const route = kind?.rest[interaction]
    if (route) admitToRoute(call, route)
    return kind ?? writes
  }

  /** The call, audited as calls of `route` are (refused or not), if the caller's roles allow that route. */
  function admitToRoute(call: WriteCall, route: RouteKey) {
    const { allow, audit } = accessOf(route)
    if (audit) {
      call.request.auditedAs = audit
      auditChangeAs({ action: audit.action, resource_type: audit.resourceType })
    }
    if (!hasAnyRole(call.principal.authorities, allow)) {
      throw forbidden(`Writing this ${type.type} requires one of the roles: ${allow.join(', ')}`)
    }
  }

  /**
   * The checks of a resource that depend on it alone (and on the call's validators): its errors
   * against the R4 base definitions, its kind (ResourceWrites.kindOf), the REST body it stands for
   * by that body's own schema and rules, and every element of it kept by the service. Their
   * refusal is kept rather than thrown, to be answered where the checks stand among the write's
   * (bodyOf). `current`: the resource an update replaces.
   */
  async function checksOf(request: FastifyRequest, resource: Resource, current?: Written): Promise<Checked> {
    const refusal = await baseDefinitionsRefusal(resource)
    if (refusal) return { refusal, beforeAdmission: true }
    let kind: ResourceWrites<Resource> | undefined
    try {
      kind = writes.kindOf?.(resource, current)
    } catch (error) {
      return { refusal: error, beforeAdmission: true }
    }
    const writesOfKind = kind ?? writes
    let body: unknown
    let stored: Resource
    try {
      body = validMergedBody(request, writesOfKind.bodySchema, writesOfKind.bodyOf(resource))
      stored = writesOfKind.preview(body, current, principalOf(request).organizationId)
    } catch (error) {
      return { kind, refusal: asElements(toAppError(error, 0) ?? error, writesOfKind, type.type) }
    }
    const dropped = droppedElements(resource, stored)
    if (dropped.length > 0) {
      const refusal = invalidFields(
        dropped.map((path) => ({ path, message: 'cannot be stored by this server' })),
        `Elements this server cannot store: ${dropped.join(', ')}`,
      )
      return { kind, refusal }
    }
    return { kind, body }
  }

  // The checks of resources created next, started ahead of their writes (checkAhead); each is
  // taken once, by its create.
  const checkedAhead = new WeakMap<Resource, Promise<Checked>>()

  /** The checks of a resource to be created, taken from those started ahead if they were. */
  function createChecks(request: FastifyRequest, resource: Resource): Promise<Checked> {
    const ahead = checkedAhead.get(resource)
    if (!ahead) return checksOf(request, resource)
    checkedAhead.delete(resource)
    return ahead
  }

  /**
   * The writes of the resource's kind and the REST body it stands for, once it is valid against the
   * R4 base definitions, the REST body's own schema and rules, and the service keeps every element
   * of it (422 otherwise, naming each element at fault). The roles of the kind's REST route are
   * asked for after the R4 definitions and the kind, before the body. `current`: the resource an
   * update replaces.
   */
  async function bodyOf(
    call: WriteCall,
    resource: Resource,
    current?: Written,
  ): Promise<{ kind: ResourceWrites<Resource>; body: unknown }> {
    const checks = await (current
      ? checksOf(call.request, resource, current)
      : createChecks(call.request, resource))
    if ('refusal' in checks && checks.beforeAdmission) throw checks.refusal
    const route = checks.kind?.rest[current ? 'update' : 'create']
    if (route) admitToRoute(call, route)
    if ('refusal' in checks) throw checks.refusal
    return { kind: checks.kind ?? writes, body: checks.body }
  }

  /**
   * Runs a service write of the kind's, its domain rules' field problems (and those of a constraint
   * the database enforced, a duplicate NPI) naming FHIR elements.
   */
  async function serviceWrite<T>(kind: ResourceWrites<Resource>, write: () => Promise<T>): Promise<T> {
    try {
      return await write()
    } catch (error) {
      throw asElements(toAppError(error, 0) ?? error, kind, type.type)
    }
  }

  /** The change's audit record names the patient the record is of, as a REST call's `patientId` does. */
  function auditPatientOf(kind: ResourceWrites<Resource>, resource: Resource) {
    const patientId = kind.patientOf(resource)
    if (patientId !== undefined) auditChangeAs({ patient_id: patientId })
  }

  /** The record of this type a conditional write's criteria match, if one does (412 for several). */
  async function matching(
    call: WriteCall,
    scope: WriteScope,
    criteria: SearchQuery,
    what: string,
  ): Promise<Written | undefined> {
    const names = Object.keys(criteria)
    if (names.length === 0) throw badRequest(`${what} needs search criteria`)
    const unknown = names.filter((name) => !criteriaNames.has(name))
    if (unknown.length > 0) throw badRequest(`${what}: unknown search parameters ${unknown.join(', ')}`)
    const page = await type.search(call.db, scope, criteria, {
      after: undefined,
      size: 2,
      order: { name: '_id', descending: false },
    })
    if (page.resources.length > 1) {
      throw new AppError('RES_003', `${what} matches more than one ${type.type}`, { status: 412 })
    }
    return page.resources[0]
  }

  async function create(call: WriteCall, scope: WriteScope, resource: Resource): Promise<WriteResult> {
    checkCompartment(scope, resource)
    const { kind, body } = await bodyOf(call, resource)
    auditPatientOf(kind, resource)
    const created = await serviceWrite(kind, () => kind.create(call.db, scope.actor, body))
    return { status: 201, resource: created }
  }

  async function update(
    call: WriteCall,
    scope: WriteScope,
    current: Written,
    resource: Resource,
    expected: ExpectedVersion,
  ): Promise<WriteResult> {
    if (resource.id !== current.id) {
      throw badRequest(`The body's id (${String(resource.id)}) is not the id of ${type.type}/${current.id}`)
    }
    checkCompartment(scope, current)
    checkCompartment(scope, resource)
    const { kind, body } = await bodyOf(call, resource, current)
    auditPatientOf(kind, current)
    const id = Number(current.id)
    const updated = await serviceWrite(kind, () => kind.update(call.db, scope.actor, id, body, expected))
    return { status: 200, resource: updated }
  }

  const recordOf = (call: WriteCall, scope: WriteScope, text: string) =>
    type.read(call.db, scope, recordId(text, type.type))

  async function remove(call: WriteCall, scope: WriteScope, id: number): Promise<WriteResult> {
    let current: Written
    try {
      current = await type.read(call.db, scope, id)
    } catch (error) {
      // Deleting what is already deleted changes nothing.
      if (error instanceof AppError && error.status === 410) return { status: 204 }
      throw error
    }
    checkCompartment(scope, current)
    const kind = kindWrites(call, 'delete', current)
    const { delete: deleteRecord } = kind
    if (!deleteRecord) throw new AppError('RES_001', `This ${type.type} is not deleted here`, { status: 405 })
    auditPatientOf(kind, current)
    await deleteRecord(call.db, scope.actor, id, expectedVersion(call))
    return { status: 204 }
  }

  return {
    type,
    routes: writes.rest,

    /**
     * Starts the checks of a resource that a create writes next, once the event loop has nothing
     * else to do (while the write before it waits for the database): that create then takes them.
     * The resource must not change before its create.
     */
    checkAhead(request: FastifyRequest, resource: Resource): void {
      if (checkedAhead.has(resource)) return
      const checks = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
        checksOf(request, resource),
      )
      // A failure reaches the create that takes it; one that never comes (its Bundle failed
      // before) leaves it unawaited.
      checks.catch(() => {})
      checkedAhead.set(resource, checks)
    },

    /** POST: with `If-None-Exist` criteria, the one match instead of a new record. */
    async create(call: WriteCall, sent: unknown, ifNoneExist?: SearchQuery): Promise<WriteResult> {
      const scope = writeScope(call.principal, 'create')
      const resource = sentResource(sent)
      if (ifNoneExist) {
        // Its answer may be a record already there: one the caller must be allowed to read (reception
        // uploads documents it may not read).
        const read = typeGrant(call.principal, type, 'read')
        if (!read.allowed) throw forbidden(`If-None-Exist answers the ${type.type} it finds: ${read.reason}`)
      }
      const found = ifNoneExist && (await matching(call, scope, ifNoneExist, 'If-None-Exist'))
      if (found) return { status: 200, resource: found }
      return create(call, scope, resource)
    },

    async update(call: WriteCall, idText: string, sent: unknown): Promise<WriteResult> {
      const scope = writeScope(call.principal, 'update')
      const resource = sentResource(sent)
      const current = await recordOf(call, scope, idText)
      return update(call, scope, current, resource, expectedVersion(call))
    },

    /** PUT on a search: the one match is updated; none, the resource is created. */
    async conditionalUpdate(call: WriteCall, criteria: SearchQuery, sent: unknown): Promise<WriteResult> {
      const scope = writeScope(call.principal, 'update')
      const resource = sentResource(sent)
      const found = await matching(call, scope, criteria, 'A conditional update')
      if (found) {
        const withId = resource.id === undefined ? { ...resource, id: found.id } : resource
        return update(call, scope, found, withId, expectedVersion(call))
      }
      if (resource.id !== undefined) {
        throw badRequest(`No ${type.type} matches, and a new one cannot take the id ${resource.id}`)
      }
      // A creation: under the create route's roles, and audited once, as a creation answered 201.
      admitToRoute(call, writes.rest.create)
      auditChangeAs({ status_code: 201 })
      return create(call, writeScope(call.principal, 'create'), resource)
    },

    /** A JSON Patch of the current resource, checked as an update of the result. */
    async patch(call: WriteCall, idText: string, operations: unknown): Promise<WriteResult> {
      const scope = writeScope(call.principal, 'update')
      const current = await recordOf(call, scope, idText)
      let patched: Resource
      try {
        patched = applyJsonPatch(current, patchOperations(operations))
      } catch (error) {
        throw error instanceof AppError
          ? new AppError('VAL_001', `JSON Patch: ${error.details}`, { fields: error.fields ?? [] })
          : error
      }
      if (patched?.resourceType !== type.type) {
        throw invalidFields([{ path: type.type, message: 'the patch changed resourceType' }])
      }
      // Without If-Match, the patch applies to the version read: a change in between is 412.
      const read = Number(current.meta?.versionId)
      const expected = expectedVersion(call) ?? read
      if (read !== expected) throw preconditionFailed(read)
      return update(call, scope, current, patched, expected)
    },

    ...(writes.delete
      ? {
          async delete(call: WriteCall, idText: string): Promise<WriteResult> {
            const scope = writeScope(call.principal, 'delete')
            return remove(call, scope, recordId(idText, type.type))
          },

          /** DELETE on a search: the one match is deleted; none, nothing is. */
          async conditionalDelete(call: WriteCall, criteria: SearchQuery): Promise<WriteResult> {
            const scope = writeScope(call.principal, 'delete')
            const found = await matching(call, scope, criteria, 'A conditional delete')
            return found ? remove(call, scope, Number(found.id)) : { status: 204 }
          },
        }
      : {}),
  }
}

export type TypeWriter = ReturnType<typeof typeWriter>
