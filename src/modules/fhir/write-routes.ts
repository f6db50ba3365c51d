import type { OperationOutcome, Resource } from '@medplum/fhirtypes'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { RouteKey } from '../../access/route-access.js'
import { AppError } from '../../errors.js'
import { accessOf } from './access.js'
import { searchQueryOf } from './search-params.js'
import type { TypeWriter, WriteCall, WriteResult } from './type-writer.js'

export const JSON_PATCH = 'application/json-patch+json'

interface WriteRouteOptions {
  base: string
  send(reply: FastifyReply, status: number, body: Resource | undefined): FastifyReply
}

/** What `Prefer: return=` asks a write to answer with: the resource unless said otherwise. */
export function preferredReturn(
  prefer: string | undefined,
): 'minimal' | 'representation' | 'OperationOutcome' {
  const asked = /return\s*=\s*"?(minimal|representation|OperationOutcome)"?/i.exec(prefer ?? '')?.[1]
  if (asked === 'minimal') return 'minimal'
  return asked?.toLowerCase() === 'operationoutcome' ? 'OperationOutcome' : 'representation'
}

/** What a write that answers no resource says it did. */
export const informational = (diagnostics: string): OperationOutcome => ({
  resourceType: 'OperationOutcome',
  issue: [{ severity: 'information', code: 'informational', diagnostics }],
})

/** The criteria of an `If-None-Exist` header (a search's query string), if it has one. */
const ifNoneExistOf = (request: FastifyRequest) => {
  const header = request.headers['if-none-exist']
  return typeof header === 'string'
    ? searchQueryOf(Object.fromEntries(new URLSearchParams(header)))
    : undefined
}

/**
 * The routes of a type's writes (TypeWriter): POST, PUT, PATCH and DELETE, by id and on a search,
 * each under the audit rule of the REST route of the same change.
 */
export function writeRoutes(
  app: FastifyInstance,
  writer: TypeWriter,
  { base, send }: WriteRouteOptions,
): void {
  const { type, routes } = writer

  const callOf = async (request: FastifyRequest): Promise<WriteCall> => ({
    db: app.db,
    principal: request.principal ?? (await app.authenticate(request)),
    request,
    ifMatch: request.headers['if-match'],
  })

  /** The result as `Prefer` asks, with the resource's ETag, time and location. */
  function answer(request: FastifyRequest, reply: FastifyReply, { status, resource }: WriteResult) {
    if (!resource) return send(reply, status, undefined)
    request.auditedIds = [Number(resource.id)]
    const version = resource.meta?.versionId
    reply.header('etag', `W/"${version}"`)
    if (resource.meta?.lastUpdated) {
      reply.header('last-modified', new Date(resource.meta.lastUpdated).toUTCString())
    }
    reply.header('location', `${base}/${type.type}/${resource.id}/_history/${version}`)
    const preferred = preferredReturn(String(request.headers.prefer ?? ''))
    if (preferred === 'minimal') return send(reply, status, undefined)
    if (preferred === 'OperationOutcome') {
      const done = status === 201 ? 'created' : 'written'
      return send(reply, status, informational(`${type.type}/${resource.id} ${done} at version ${version}`))
    }
    return send(reply, status, resource)
  }

  const options = (route: RouteKey, changeStatus: number) => ({
    schema: { hide: true },
    config: { access: accessOf(route), changeStatus },
  })
  const byId = `/${type.type}/:id`
  const query = (request: FastifyRequest) => searchQueryOf(request.query as Record<string, unknown>)

  app.post(`/${type.type}`, options(routes.create, 201), async (request, reply) =>
    answer(request, reply, await writer.create(await callOf(request), request.body, ifNoneExistOf(request))),
  )
  app.put<{ Params: { id: string } }>(byId, options(routes.update, 200), async (request, reply) =>
    answer(request, reply, await writer.update(await callOf(request), request.params.id, request.body)),
  )
  app.put(`/${type.type}`, options(routes.update, 200), async (request, reply) =>
    answer(
      request,
      reply,
      await writer.conditionalUpdate(await callOf(request), query(request), request.body),
    ),
  )
  app.patch<{ Params: { id: string } }>(byId, options(routes.update, 200), async (request, reply) => {
    if (!String(request.headers['content-type'] ?? '').startsWith(JSON_PATCH)) {
      throw new AppError('VAL_001', `PATCH takes a JSON Patch (${JSON_PATCH})`, { status: 415 })
    }
    return answer(request, reply, await writer.patch(await callOf(request), request.params.id, request.body))
  })

  const { delete: deleteOne, conditionalDelete } = writer
  if (!routes.delete || !deleteOne || !conditionalDelete) return
  app.delete<{ Params: { id: string } }>(byId, options(routes.delete, 204), async (request, reply) =>
    answer(request, reply, await deleteOne(await callOf(request), request.params.id)),
  )
  app.delete(`/${type.type}`, options(routes.delete, 204), async (request, reply) =>
    answer(request, reply, await conditionalDelete(await callOf(request), query(request))),
  )
}
