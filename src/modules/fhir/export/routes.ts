import { randomUUID } from 'node:crypto'
import type { Bundle } from '@medplum/fhirtypes'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { RouteAccess } from '../../../access/route-access.js'
import { auditChange } from '../../../audit/change-audit.js'
import { AppError, forbidden } from '../../../errors.js'
import { sendStoredBytes } from '../../../http/stored-bytes.js'
import type { Principal } from '../../../identity/principal.js'
import { parseRange } from '../../../lib/byte-range.js'
import { typeGrant } from '../access.js'
import { operationOutcome } from '../operation-outcome.js'
import type { FhirResourceType } from '../resource-type.js'
import { searchQueryOf } from '../search-params.js'
import { findGroup, groupsOf } from './groups.js'
import { deleteExport, exportFiles, findExport, insertExport } from './jobs.js'
import { exportParameters, parametersOf } from './parameters.js'
import type { ExportFileStore, ExportWorker } from './worker.js'

export interface ExportRoutesOptions {
  /** The FHIR base URL (absolute). */
  base: string
  types: readonly FhirResourceType[]
  worker: ExportWorker
  store: ExportFileStore
  retentionHours: number
}

const FHIR_JSON = 'application/fhir+json'
const NDJSON = 'application/fhir+ndjson'
// What a kick-off and a cancellation answer.
const ACCEPTED = 202
const RETRY_AFTER_SECONDS = 2
/** Where an export's files are downloaded, under the FHIR base. */
export const EXPORT_FILE_PATH = '/bulk-export/:id/:file'
const FILE_NAME = /^([0-9]{1,6})\.ndjson$/
const EXPORT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const audited = (action: 'CREATE' | 'READ' | 'DELETE'): RouteAccess => ({
  allow: 'authenticated',
  audit: { resourceType: 'bulk-export', action },
})
const GROUP_READ: RouteAccess = { allow: 'authenticated' }

const notFound = (details: string) => new AppError('RES_001', details)

// The names clients give NDJSON: the Bulk Data specification's own first, which is also the answer
// to any range that does not name one (`*/*`, or the JSON a FHIR client asks for by default).
const NDJSON_TYPES = [NDJSON, 'application/ndjson', 'application/x-ndjson']
const ANY_NDJSON = ['*/*', 'application/*', 'application/json', FHIR_JSON]

/** The NDJSON media type an Accept header prefers (by q, then the order above), or undefined if none. */
function ndjsonTypeFor(accept: string | undefined): string | undefined {
  if (accept === undefined || accept.trim() === '') return NDJSON
  let best: { type: string; q: number } | undefined
  for (const range of accept.split(',')) {
    const [name = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase())
    const q = Number(parameters.find((parameter) => parameter.startsWith('q='))?.slice(2) ?? 1)
    const type = NDJSON_TYPES.includes(name) ? name : ANY_NDJSON.includes(name) ? NDJSON : undefined
    if (type === undefined || !(q > 0)) continue
    const better =
      !best || q > best.q || (q === best.q && NDJSON_TYPES.indexOf(type) < NDJSON_TYPES.indexOf(best.type))
    if (better) best = { type, q }
  }
  return best?.type
}

/**
 * FHIR Bulk Data Access (v2): kick-off at `$export` (system, Patient, Group), a status URL to poll,
 * NDJSON files to download with the same token, and the Groups an export can name. Registered
 * inside the FHIR plugin: its errors are OperationOutcomes.
 */
const exportRoutes: FastifyPluginAsync<ExportRoutesOptions> = async (app, options) => {
  const { base, types, worker, store } = options
  const statusUrl = (id: string) => `${base}/bulk-export/${id}`

  const send = (reply: FastifyReply, status: number, body: unknown, type = FHIR_JSON) =>
    reply.code(status).type(`${type}; charset=utf-8`).send(body)

  const caller = async (request: FastifyRequest): Promise<Principal> =>
    request.principal ?? (await app.authenticate(request))
  // Before the handler on the routes that change something, as the access guard does on /api
  // routes: their audit record, made ready before the handler and written with the change
  // (src/audit/change-audit.ts), names the caller.
  const onRequest = async (request: FastifyRequest) => {
    await caller(request)
  }

  /**
   * The types an export by this caller holds, a note for each it leaves out, and the categories the
   * token's scopes keep a type to.
   */
  function exportedTypes(principal: Principal, asked: string[] | undefined) {
    const chosen: string[] = []
    const issues: string[] = []
    const categories: Record<string, readonly string[]> = {}
    for (const type of types) {
      if (asked && !asked.includes(type.type)) continue
      const grant = typeGrant(principal, type, 'search')
      const refusal = !grant.allowed
        ? grant.reason
        : // A patient/ grant keeps a token to one patient: not a population.
          grant.patient === undefined
          ? undefined
          : 'bulk export needs user/ or system/ scopes'
      if (refusal === undefined) {
        chosen.push(type.type)
        if (grant.allowed && grant.categories) categories[type.type] = grant.categories
      } else if (asked) throw forbidden(`${type.type} cannot be exported: ${refusal}`)
      else issues.push(`${type.type} was not exported: ${refusal}`)
    }
    if (chosen.length === 0) throw forbidden('The token may read none of the types an export holds')
    return { chosen, issues, categories }
  }

  /** Each type's filter, kept to the categories the token is granted (the worker searches with it). */
  function grantedFilters(filters: Record<string, string>, categories: Record<string, readonly string[]>) {
    const result = { ...filters }
    for (const [type, granted] of Object.entries(categories)) {
      const query = new URLSearchParams(result[type] ?? '')
      query.append('category', granted.join(','))
      result[type] = query.toString()
    }
    return result
  }

  async function kickOff(
    request: FastifyRequest,
    reply: FastifyReply,
    level: 'system' | 'patient' | 'group',
    groupId?: string,
  ) {
    const principal = await caller(request)
    if (!/respond-async/i.test(String(request.headers.prefer ?? ''))) {
      throw new AppError('VAL_001', 'A bulk export runs asynchronously: send Prefer: respond-async', {
        status: 400,
      })
    }
    if (groupId !== undefined && !(await findGroup(app.db, principal.organizationId, groupId))) {
      throw notFound(`Group/${groupId} not found`)
    }
    const query = searchQueryOf(request.query as Record<string, unknown>)
    const body = request.method === 'POST' && request.body ? parametersOf(request.body) : {}
    const parameters = exportParameters({ ...query, ...body }, types)
    const { chosen, issues, categories } = exportedTypes(principal, parameters.types)
    const id = randomUUID()
    await app.db.transaction().execute(async (trx) => {
      await insertExport(trx, {
        id,
        organizationId: principal.organizationId,
        requestedBy: principal.userId,
        level,
        groupId: groupId ?? null,
        types: chosen,
        typeFilters: grantedFilters(parameters.typeFilters, categories),
        since: parameters.since ?? null,
        requestUrl: `${options.base.replace(/\/fhir\/R4$/, '')}${request.url}`,
        issues,
        // Until it finishes; then the retention period starts again from its completion.
        expiresAt: new Date(Date.now() + options.retentionHours * 3_600_000),
      })
      await auditChange(trx, [], ACCEPTED)
    })
    worker.wake()
    reply.header('content-location', statusUrl(id))
    const accepted = operationOutcome(ACCEPTED, `Export accepted; poll ${statusUrl(id)}`)
    for (const issue of accepted.issue ?? []) {
      issue.severity = 'information'
      issue.code = 'informational'
    }
    return send(reply, ACCEPTED, accepted)
  }

  /** The caller's own export, or 404 (another caller's, expired, cancelled or unknown). */
  async function ownExport(request: FastifyRequest<{ Params: { id: string } }>) {
    const principal = await caller(request)
    const { id } = request.params
    const job = EXPORT_ID.test(id)
      ? await findExport(app.db, principal.organizationId, principal.userId, id)
      : undefined
    if (!job) throw notFound(`No export ${id} of this caller (expired, cancelled or never started)`)
    return job
  }

  for (const [path, level] of [
    ['/$export', 'system'],
    ['/Patient/$export', 'patient'],
  ] as const) {
    app.get(
      path,
      { schema: { hide: true }, config: { access: audited('CREATE') }, onRequest },
      (request, reply) => kickOff(request, reply, level),
    )
    app.post(
      path,
      { schema: { hide: true }, config: { access: audited('CREATE') }, onRequest },
      (request, reply) => kickOff(request, reply, level),
    )
  }
  for (const method of ['GET', 'POST'] as const) {
    app.route<{ Params: { id: string } }>({
      method,
      url: '/Group/:id/$export',
      schema: { hide: true },
      config: { access: audited('CREATE') },
      onRequest,
      handler: (request, reply) => kickOff(request, reply, 'group', request.params.id),
    })
  }

  app.get('/Group', { schema: { hide: true }, config: { access: GROUP_READ } }, async (request, reply) => {
    const principal = await caller(request)
    const wanted = (searchQueryOf(request.query as Record<string, unknown>)._id ?? []).flatMap((value) =>
      value.split(','),
    )
    const groups = (await groupsOf(app.db, principal.organizationId)).filter(
      (group) => wanted.length === 0 || wanted.includes(group.id),
    )
    const bundle: Bundle = {
      resourceType: 'Bundle',
      type: 'searchset',
      total: groups.length,
      link: [
        { relation: 'self', url: `${base}/Group${wanted.length > 0 ? `?_id=${wanted.join(',')}` : ''}` },
      ],
      entry: groups.map((group) => ({
        fullUrl: `${base}/Group/${group.id}`,
        resource: group,
        search: { mode: 'match' },
      })),
    }
    if (groups.length === 0) delete bundle.entry
    return send(reply, 200, bundle)
  })
  app.get<{ Params: { id: string } }>(
    '/Group/:id',
    { schema: { hide: true }, config: { access: GROUP_READ } },
    async (request, reply) => {
      const principal = await caller(request)
      const group = await findGroup(app.db, principal.organizationId, request.params.id)
      if (!group) throw notFound(`Group/${request.params.id} not found`)
      return send(reply, 200, group)
    },
  )

  app.get<{ Params: { id: string } }>(
    '/bulk-export/:id',
    { schema: { hide: true }, config: { access: audited('READ') } },
    async (request, reply) => {
      const job = await ownExport(request)
      if (job.status === 'failed') {
        return send(reply, 500, operationOutcome(500, job.error ?? 'The export failed'))
      }
      if (job.status !== 'completed') {
        const position = job.position as { typeIndex: number }
        const current = job.types[position.typeIndex]
        const progress =
          job.status === 'accepted'
            ? 'Waiting to start'
            : `${job.exported} resources exported${current ? `; now ${current} (type ${position.typeIndex + 1} of ${job.types.length})` : ''}`
        return reply
          .code(202)
          .header('x-progress', progress)
          .header('retry-after', RETRY_AFTER_SECONDS)
          .send()
      }
      const files = await exportFiles(app.db, job.organization_id, job.id)
      const link = (file: { sequence: number }) => `${statusUrl(job.id)}/${file.sequence}.ndjson`
      reply.header('expires', job.expires_at.toUTCString())
      return reply.type('application/json; charset=utf-8').send({
        transactionTime: job.transaction_time?.toISOString(),
        request: job.request_url,
        requiresAccessToken: true,
        output: files
          .filter((file) => file.resource_type !== 'OperationOutcome')
          .map((file) => ({ type: file.resource_type, url: link(file), count: file.count })),
        error: files
          .filter((file) => file.resource_type === 'OperationOutcome')
          .map((file) => ({ type: 'OperationOutcome', url: link(file), count: file.count })),
      })
    },
  )

  app.delete<{ Params: { id: string } }>(
    '/bulk-export/:id',
    { schema: { hide: true }, config: { access: audited('DELETE') }, onRequest },
    async (request, reply) => {
      const job = await ownExport(request)
      const keys = await app.db.transaction().execute(async (trx) => {
        const keys = await deleteExport(trx, job.organization_id, job.id)
        await auditChange(trx, [], ACCEPTED)
        return keys
      })
      await Promise.all(keys.map((key) => store.remove(key)))
      return send(reply, ACCEPTED, {
        ...operationOutcome(ACCEPTED, `Export ${job.id} cancelled and its files removed`),
        issue: [
          { severity: 'information', code: 'informational', diagnostics: `Export ${job.id} cancelled` },
        ],
      })
    },
  )

  app.get<{ Params: { id: string; file: string } }>(
    EXPORT_FILE_PATH,
    { schema: { hide: true }, config: { access: audited('READ') } },
    async (request, reply) => {
      const job = await ownExport(request)
      const sequence = FILE_NAME.exec(request.params.file)?.[1]
      const file =
        job.status === 'completed' && sequence !== undefined
          ? (await exportFiles(app.db, job.organization_id, job.id)).find(
              (candidate) => candidate.sequence === Number(sequence),
            )
          : undefined
      if (!file) throw notFound(`No file ${request.params.file} in export ${job.id}`)
      const type = ndjsonTypeFor(request.headers.accept)
      if (!type) {
        const served = `only NDJSON (${NDJSON_TYPES.join(', ')}) is`
        return send(
          reply,
          406,
          operationOutcome(406, `Accept: ${request.headers.accept} is not served; ${served}`),
        )
      }
      const size = Number(file.size_bytes)
      reply.header('accept-ranges', 'bytes').header('cache-control', 'private, no-store')
      const range = parseRange(request.headers.range, size)
      if (range === 'unsatisfiable') {
        reply.header('content-range', `bytes */${size}`)
        return send(reply, 416, operationOutcome(416, `The file has ${size} bytes`))
      }
      reply.type(type)
      return sendStoredBytes(reply, size, range, (part) => store.read(file.storage_key, part))
    },
  )
}

export default exportRoutes
