import formbody from '@fastify/formbody'
import type { Bundle, BundleEntry, Resource } from '@medplum/fhirtypes'
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { RouteKey } from '../../access/route-access.js'
import { AppError, forbidden, gone } from '../../errors.js'
import { sentMethod } from '../../http/head-requests.js'
import { jsonBodyParser } from '../../http/json-body.js'
import type { ProviderMetadata } from '../../identity/external-provider.js'
import { PAGE_COMPRESSION } from '../../plugins/compression.js'
import { toAppError, wrongMethod } from '../../plugins/error-handler.js'
import type { DocumentStorage } from '../documents/service.js'
import { accessOf, typeGrant } from './access.js'
import binaryRoutes from './binary-routes.js'
import { bundleRoutes } from './bundle-routes.js'
import { capabilityStatement, smartConfiguration } from './capability.js'
import exportRoutes, { EXPORT_FILE_PATH, type ExportRoutesOptions } from './export/routes.js'
import type { KeptResource } from './kept-versions.js'
import { ignoredParameters, operationOutcome } from './operation-outcome.js'
import { provenancesOf } from './provenance.js'
import { recordId } from './record-id.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import { checkCategories, inCategories, scopeGrant, withinCategories } from './scopes.js'
import { COMMON_SEARCH_PARAMETERS } from './search-conditions.js'
import {
  cursorAfter,
  cursorFor,
  historyPage,
  PAGE_SIZE_MAX,
  pageSize,
  type SearchQuery,
  searchOrder,
  searchQueryOf,
  unimplementedSubsets,
} from './search-params.js'
import { typeWriter } from './type-writer.js'
import { JSON_PATCH, writeRoutes } from './write-routes.js'

interface FhirOptions {
  /** The FHIR base URL, absolute (links are absolute): the service's public address and /fhir/R4. */
  base: string
  /** The resource types served (resourceTypes()). */
  types: readonly FhirResourceType[]
  /** The authorization server that issues the tokens: its endpoints, as its discovery document names them. */
  authorization: ProviderMetadata
  bodyLimit: number
  /** Writes without `If-Match` are refused (428), as in the REST API. */
  requireIfMatch: boolean
  /** The most entries and bytes a batch or transaction Bundle may hold (413 beyond). */
  bundleLimits: { entries: number; bytes: number }
  /** Where document bytes are kept, for Binary. */
  documents: DocumentStorage
  bulkExport: Omit<ExportRoutesOptions, 'base' | 'types'>
}

const FHIR_JSON = 'application/fhir+json'

// Result parameters every search takes, besides the search parameters (COMMON_SEARCH_PARAMETERS and the type's own).
const COMMON_PARAMETERS = new Set([
  '_count',
  '_cursor',
  '_summary',
  '_elements',
  '_format',
  '_include',
  '_revinclude',
  '_sort',
])

/** The one reverse include served: the provenance of each match. */
const PROVENANCE_REVINCLUDE = 'Provenance:target'
const PROVENANCE_SEARCH_PARAMETERS = new Set(['target', '_format'])
/** A reference to a record of a type (`Condition/12`), as `target` takes it. */
const RECORD_REFERENCE = /^[A-Z][A-Za-z]+\/[1-9][0-9]{0,9}$/

const notFound = (details: string) => new AppError('RES_001', details)

/**
 * Audits `resources` as the REST reads or lists of the same records would be: under the rule of
 * the type's REST route, or of their own records' routes when the type names them (lab results
 * among Observations). `included` ones are audited besides the request's own; records whose REST
 * route is not audited (practitioners) are not.
 */
function auditAs(
  request: FastifyRequest,
  type: FhirResourceType,
  resources: Resource[],
  interaction: 'read' | 'search',
  included = false,
) {
  const own = interaction === 'read' ? type.restRead : type.restSearch
  const byRoute = new Map<RouteKey, number[]>()
  for (const resource of resources) {
    const route = type.restRoutesOf?.(resource)?.[interaction] ?? own
    byRoute.set(route, [...(byRoute.get(route) ?? []), Number(resource.id)])
  }
  if (!included && interaction === 'read') {
    // One record: audited under its own route's rule.
    const [route, ids] = [...byRoute][0] ?? [own, []]
    request.auditedAs = accessOf(route).audit ?? null
    request.auditedIds = ids
    const [resource] = resources
    request.auditedPatientId =
      (resource && (type.patientOf?.(resource) ?? type.writes?.patientOf(resource))) ?? null
    return
  }
  if (!included) request.auditedIds = byRoute.get(own) ?? []
  for (const [route, ids] of byRoute) {
    const rule = accessOf(route).audit
    if ((included || route !== own) && rule) {
      request.auditedAlso = [...(request.auditedAlso ?? []), { rule, ids }]
    }
  }
}

const JSON_FORMATS = ['json', 'application/json', FHIR_JSON, 'application/json+fhir']
const ANY_JSON = [...JSON_FORMATS.slice(1), '*/*', 'application/*']

/**
 * The format asked for when it is not JSON: a `_format` other than JSON, or an Accept header none
 * of whose media ranges JSON satisfies (`application/fhir+xml` alone). No Accept means any.
 */
function unservedFormat(request: FastifyRequest): string | undefined {
  const format = (request.query as Record<string, unknown>)._format
  const asked = (Array.isArray(format) ? format : format === undefined ? [] : [format]).map(String)
  const mediaType = (value: string) => (value.split(';')[0] ?? '').trim().toLowerCase()
  const wrong = asked.find((value) => !JSON_FORMATS.includes(mediaType(value)))
  if (wrong !== undefined) return `_format=${wrong}`
  const accept = request.headers.accept
  if (accept === undefined || accept.trim() === '' || asked.length > 0) return undefined
  const ranges = accept.split(',').map(mediaType)
  return ranges.some((range) => ANY_JSON.includes(range)) ? undefined : `Accept: ${accept}`
}

/** `Prefer: handling=strict` makes an unknown search parameter an error; lenient ignores it. */
const isStrict = (request: FastifyRequest) =>
  /handling\s*=\s*strict/i.test(String(request.headers.prefer ?? ''))

/**
 * HL7 FHIR R4 over the same records, organizations, roles and audit as the REST API, at /fhir/R4:
 * JSON only, errors as OperationOutcome (the API envelope does not apply), SMART scopes narrowing
 * what a token reads on top of its roles.
 */
const fhirRoutes: FastifyPluginAsync<FhirOptions> = async (app, options) => {
  const { base, types } = options

  app.addContentTypeParser(FHIR_JSON, { parseAs: 'buffer' }, jsonBodyParser)
  app.addContentTypeParser(JSON_PATCH, { parseAs: 'buffer' }, jsonBodyParser)
  await app.register(formbody)

  const send = (reply: FastifyReply, status: number, body: Resource | undefined) =>
    body === undefined
      ? reply.code(status).send()
      : reply.code(status).type(`${FHIR_JSON}; charset=utf-8`).send(body)

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const appError = toAppError(error, options.bodyLimit)
    if (!appError) {
      request.log.error(
        { err: { type: error.name, code: error.code, message: error.message } },
        'unhandled error',
      )
      return send(reply, 500, operationOutcome(500, `Unexpected error; quote request id ${request.id}`))
    }
    return send(reply, appError.status, operationOutcome(appError.status, appError.details, appError.fields))
  })
  app.setNotFoundHandler((request, reply) => {
    const wrong = wrongMethod(request)
    if (wrong) return send(reply.header('allow', wrong.allow), 405, operationOutcome(405, wrong.details))
    return send(
      reply,
      404,
      operationOutcome(404, `No FHIR interaction ${sentMethod(request.raw)} ${request.url.split('?')[0]}`),
    )
  })
  // Binary serves the document's own type, and export files NDJSON under the names clients give it:
  // each answers Accept itself (the file route with 406 when no NDJSON type is acceptable).
  const exportFile = `${app.prefix}${EXPORT_FILE_PATH}`
  const ownFormats = (request: FastifyRequest) =>
    request.url.startsWith('/fhir/R4/Binary/') || request.routeOptions.url === exportFile
  app.addHook('onRequest', async (request, reply) => {
    const refused = ownFormats(request) ? undefined : unservedFormat(request)
    if (refused) {
      return send(
        reply,
        406,
        operationOutcome(406, `${refused} is not served; only FHIR JSON (${FHIR_JSON}) is`),
      )
    }
  })
  await app.register(binaryRoutes, { base, documents: options.documents })
  await app.register(exportRoutes, { ...options.bulkExport, base, types })

  /**
   * The caller, allowed by role and by SMART scope to do `interaction` on `type`, and the categories
   * its scopes keep it to (searches are narrowed to them, resources read are checked against them).
   */
  async function readScope(request: FastifyRequest, type: FhirResourceType, interaction: 'read' | 'search') {
    const principal = request.principal ?? (await app.authenticate(request))
    const grant = typeGrant(principal, type, interaction)
    if (!grant.allowed) throw forbidden(grant.reason)
    const patient = grant.patient === undefined ? undefined : Number(grant.patient)
    if (patient !== undefined && !Number.isSafeInteger(patient))
      throw forbidden('The launch patient is not a patient id')
    return { actor: principal, patient, categories: grant.categories } satisfies ReadScope & {
      categories: readonly string[] | undefined
    }
  }

  /**
   * The resources the matches reference, for `_include=<Type>:<name>`, each read with the caller's
   * own rights: one the caller may not read is left out, as is one that is gone. They are audited
   * as the REST reads of their types are (patients are, practitioners are not).
   */
  async function included(request: FastifyRequest, references: Set<string>): Promise<BundleEntry[]> {
    const entries: BundleEntry[] = []
    const readResources = new Map<FhirResourceType, Resource[]>()
    for (const reference of references) {
      const [typeName, id] = reference.split('/') as [string, string]
      const target = types.find((candidate) => candidate.type === typeName)
      if (!target) continue
      try {
        const scope = await readScope(request, target, 'read')
        const resource = await target.read(app.db, scope, Number(id))
        checkCategories(resource, scope.categories)
        entries.push({ fullUrl: `${base}/${reference}`, resource, search: { mode: 'include' } })
        readResources.set(target, [...(readResources.get(target) ?? []), resource])
      } catch (error) {
        if (!(error instanceof AppError)) throw error
      }
    }
    for (const [target, resources] of readResources) auditAs(request, target, resources, 'read', true)
    return entries
  }

  /**
   * The caller, authenticated, when its scopes reach Provenance (its roles reach a record's
   * provenance as they reach the record).
   */
  const provenanceReader = (request: FastifyRequest) =>
    request.principal && scopeGrant(request.principal, 'Provenance', 'read').allowed
      ? request.principal
      : undefined

  app.get('/metadata', { schema: { hide: true } }, async (_request, reply) =>
    send(reply, 200, capabilityStatement(base, types, options.authorization)),
  )
  app.get('/.well-known/smart-configuration', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/json').send(smartConfiguration(types, options.authorization)),
  )

  const writers = new Map(
    types.flatMap((type) =>
      type.writes ? [[type.type, typeWriter(type, type.writes, options)] as const] : [],
    ),
  )
  bundleRoutes(app, { base, types, writers, limits: options.bundleLimits, send })

  for (const type of types) {
    const readOne = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
      const scope = await readScope(request, type, 'read')
      const id = recordId(request.params.id, type.type)
      const subsets = unimplementedSubsets(searchQueryOf(request.query as Record<string, unknown>), 'read')
      if (subsets.length > 0) {
        if (isStrict(request)) {
          throw new AppError('VAL_001', `Unsupported: ${subsets.join('; ')}`, { status: 400 })
        }
        // Names only: a value could hold anything, and a header takes only some characters.
        const names = [...new Set(subsets.map((subset) => subset.split('=')[0]))].join(', ')
        reply.header('warning', `299 - "Not supported, the whole resource is returned: ${names}"`)
      }
      request.auditedIds = [id]
      const resource = await type.read(app.db, scope, id)
      checkCategories(resource, scope.categories)
      auditAs(request, type, [resource], 'read')
      return resource
    }

    const sendRecord = (request: FastifyRequest, reply: FastifyReply, resource: Resource) => {
      const version = resource.meta?.versionId
      const etag = `W/"${version}"`
      reply.header('etag', etag)
      const held = String(request.headers['if-none-match'] ?? '')
        .split(',')
        .map((tag) => tag.trim())
      if (held.includes(etag) || held.includes(`"${version}"`) || held.includes('*')) {
        return reply.code(304).send()
      }
      return send(reply, 200, resource)
    }

    app.get<{ Params: { id: string } }>(
      `/${type.type}/:id`,
      { schema: { hide: true }, config: { access: accessOf(type.restRead) } },
      async (request, reply) => sendRecord(request, reply, await readOne(request, reply)),
    )

    /** The provenance of a record the caller reads (and is audited reading), scopes permitting. */
    const provenanceOfRecord = async (
      request: FastifyRequest<{ Params: { id: string } }>,
      reply: FastifyReply,
    ) => {
      const resource = await readOne(request, reply)
      const reader = provenanceReader(request)
      if (!reader) throw forbidden("The token's scopes do not allow read of Provenance")
      const [provenance] = await provenancesOf(app.db, reader.organizationId, [resource])
      return provenance as Resource
    }
    app.get<{ Params: { id: string } }>(
      `/Provenance/${type.type}-:id`,
      { schema: { hide: true }, config: { access: accessOf(type.restRead) } },
      async (request, reply) => sendRecord(request, reply, await provenanceOfRecord(request, reply)),
    )
    app.get<{ Params: { id: string; vid: string } }>(
      `/Provenance/${type.type}-:id/_history/:vid`,
      { schema: { hide: true }, config: { access: accessOf(type.restRead) } },
      async (request, reply) => {
        const provenance = await provenanceOfRecord(request, reply)
        const version = provenance.meta?.versionId
        if (request.params.vid !== version) {
          throw notFound(
            `Provenance/${provenance.id} is kept for its record's current version (${version}) only`,
          )
        }
        return sendRecord(request, reply, provenance)
      },
    )

    /**
     * The record's current version when the caller may read it now; undefined when it was deleted
     * (its earlier versions stay readable, as its history lists them).
     */
    const readUnlessDeleted = async (
      request: FastifyRequest<{ Params: { id: string } }>,
      reply: FastifyReply,
    ) => {
      try {
        return await readOne(request, reply)
      } catch (error) {
        if (error instanceof AppError && error.status === 410) return undefined
        throw error
      }
    }

    // A version other than the current one is read only by a caller who may read the record now.
    app.get<{ Params: { id: string; vid: string } }>(
      `/${type.type}/:id/_history/:vid`,
      { schema: { hide: true }, config: { access: accessOf(type.restRead) } },
      async (request, reply) => {
        const id = recordId(request.params.id, type.type)
        const current = await readUnlessDeleted(request, reply)
        const { vid } = request.params
        if (current?.meta?.versionId === vid) return sendRecord(request, reply, current)
        const scope = await readScope(request, type, 'read')
        const kept = /^[1-9][0-9]{0,8}$/.test(vid)
          ? await type.versions?.one(app.db, scope.actor.organizationId, id, Number(vid))
          : undefined
        if (!kept) throw notFound(`${type.type}/${id} has no version ${vid}`)
        if (kept.deleted) throw gone(`${type.type}/${id} was deleted in version ${vid}`)
        checkCategories(kept.resource, scope.categories)
        return sendRecord(request, reply, kept.resource)
      },
    )

    const writer = writers.get(type.type)
    if (writer) writeRoutes(app, writer, { base, send })

    const { versions } = type
    if (versions) {
      app.get<{ Params: { id: string } }>(
        `/${type.type}/:id/_history`,
        { schema: { hide: true }, config: { access: accessOf(type.restRead) } },
        async (request, reply) => {
          const id = recordId(request.params.id, type.type)
          // A deleted record's history is still its history: its versions, the deletion last.
          await readUnlessDeleted(request, reply)
          const query = searchQueryOf(request.query as Record<string, unknown>)
          const page = historyPage(query)
          const scope = await readScope(request, type, 'read')
          const kept = await versions.page(app.db, scope.actor.organizationId, id, page)
          for (const version of kept.versions) checkCategories(version.resource, scope.categories)
          const self = `${base}/${type.type}/${id}/_history`
          return send(reply, 200, historyBundle(base, self, page, kept))
        },
      )

      // The type's history: every version of its records the caller may search, newest change first.
      app.get(
        `/${type.type}/_history`,
        { schema: { hide: true }, config: { access: accessOf(type.restSearch) } },
        async (request, reply) => {
          const scope = await readScope(request, type, 'search')
          const query = searchQueryOf(request.query as Record<string, unknown>)
          const page = historyPage(query)
          const since = sinceOf(query)
          const kept = await versions.all(
            app.db,
            scope.actor.organizationId,
            { since, patient: scope.patient },
            page,
          )
          for (const version of kept.versions) checkCategories(version.resource, scope.categories)
          auditAs(
            request,
            type,
            kept.versions.map((version) => version.resource),
            'search',
          )
          const self = `${base}/${type.type}/_history${since ? `?_since=${encodeURIComponent(since.toISOString())}` : ''}`
          return send(reply, 200, historyBundle(base, self, page, kept))
        },
      )
    }

    const search = async (request: FastifyRequest, reply: FastifyReply, query: SearchQuery) => {
      const scope = await readScope(request, type, 'search')
      const granted = withinCategories(query, scope.categories)
      const known = new Set([
        ...COMMON_PARAMETERS,
        ...COMMON_SEARCH_PARAMETERS.map((parameter) => parameter.name),
        ...type.searchParameters.map((parameter) => parameter.name),
      ])
      const ignored = Object.keys(query).filter((name) => !known.has(name))
      if (ignored.length > 0 && isStrict(request)) {
        throw new AppError('VAL_001', `Unknown search parameters: ${ignored.join(', ')}`, { status: 400 })
      }
      const includes = (query._include ?? []).map((value) => ({ value, follow: followed(type, value) }))
      const revincludes = query._revinclude ?? []
      const order = searchOrder(query, type.sortParameters)
      const unsupported = [
        ...includes.filter((include) => !include.follow).map((include) => `_include=${include.value}`),
        ...revincludes
          .filter((value) => value !== PROVENANCE_REVINCLUDE)
          .map((value) => `_revinclude=${value} (only ${PROVENANCE_REVINCLUDE})`),
        ...(order
          ? []
          : [`_sort=${(query._sort ?? []).join(',')} (sorts by one of ${type.sortParameters.join(', ')})`]),
        ...unimplementedSubsets(query, 'search'),
      ]
      ignored.push(...unsupported)
      if (unsupported.length > 0 && isStrict(request)) {
        throw new AppError('VAL_001', `Unsupported: ${unsupported.join('; ')}`, { status: 400 })
      }
      const kept = Object.fromEntries(
        Object.entries(query)
          .filter(([name]) => known.has(name))
          .map(([name, values]): [string, string[]] => [
            name,
            name === '_include'
              ? values.filter((value) => followed(type, value))
              : name === '_revinclude'
                ? values.filter((value) => value === PROVENANCE_REVINCLUDE)
                : (name === '_sort' && !order) || name === '_elements'
                  ? []
                  : name === '_summary'
                    ? values.filter((value) => value === 'count' || value === 'false')
                    : values,
          ])
          .filter(([, values]) => values.length > 0),
      )
      const outcome: BundleEntry[] =
        ignored.length > 0
          ? [
              {
                resource: ignoredParameters(ignored),
                search: { mode: 'outcome' },
              },
            ]
          : []
      const self = `${base}/${type.type}${queryString(kept)}`
      const size = pageSize(query)
      if (query._summary?.[0] === 'count' || size === 0) {
        const total = await type.count(app.db, scope, granted)
        return send(reply, 200, searchset({ total, link: [{ relation: 'self', url: self }], entry: outcome }))
      }
      const byId = { name: '_id', descending: false }
      const after = cursorAfter(query, order ?? byId)
      const page = await type.search(app.readDb(request), scope, granted, {
        after,
        size,
        order: order ?? byId,
      })
      auditAs(request, type, page.resources, 'search')
      const references = new Set(
        includes.flatMap(({ follow }) =>
          follow ? page.resources.flatMap((resource) => follow(resource)) : [],
        ),
      )
      const includedEntries = await included(request, references)
      const provenances =
        revincludes.includes(PROVENANCE_REVINCLUDE) && provenanceReader(request)
          ? await provenancesOf(app.db, scope.actor.organizationId, page.resources)
          : []
      const next = page.next
        ? `${base}/${type.type}${queryString({ ...kept, _cursor: [cursorFor(page.next, order ?? byId)] })}`
        : undefined
      return send(
        reply,
        200,
        searchset({
          // Known without counting when the first page holds every match; otherwise _summary=count.
          ...(after === undefined && !page.next ? { total: page.resources.length } : {}),
          link: [{ relation: 'self', url: self }, ...(next ? [{ relation: 'next', url: next }] : [])],
          entry: [
            ...page.resources.map((resource) => ({
              fullUrl: `${base}/${type.type}/${resource.id}`,
              resource,
              search: { mode: 'match' as const },
            })),
            ...includedEntries,
            ...provenances.map((provenance) => ({
              fullUrl: `${base}/Provenance/${provenance.id}`,
              resource: provenance,
              search: { mode: 'include' as const },
            })),
            ...outcome,
          ],
        }),
      )
    }

    // A searchset is a list page: compressed like the API's pages.
    app.get(
      `/${type.type}`,
      { schema: { hide: true }, compress: PAGE_COMPRESSION, config: { access: accessOf(type.restSearch) } },
      async (request, reply) =>
        search(request, reply, searchQueryOf(request.query as Record<string, unknown>)),
    )
    app.post(
      `/${type.type}/_search`,
      { schema: { hide: true }, compress: PAGE_COMPRESSION, config: { access: accessOf(type.restSearch) } },
      async (request, reply) =>
        search(
          request,
          reply,
          searchQueryOf({ ...(request.query as object), ...((request.body as object | undefined) ?? {}) }),
        ),
    )
  }

  // Provenance is searched by target only: the provenance of each record named that the caller reads
  // (read and audited as an _include's are); a reference to no record of ours finds nothing.
  const patientType = types.find((type) => type.type === 'Patient')
  app.get(
    '/Provenance',
    {
      schema: { hide: true },
      config: {
        access: { allow: 'authenticated', audit: patientType && accessOf(patientType.restSearch).audit },
      },
    },
    async (request, reply) => {
      if (!request.principal) await app.authenticate(request)
      const reader = provenanceReader(request)
      if (!reader) throw forbidden("The token's scopes do not allow search of Provenance")
      const query = searchQueryOf(request.query as Record<string, unknown>)
      const ignored = Object.keys(query).filter((name) => !PROVENANCE_SEARCH_PARAMETERS.has(name))
      const targets = (query.target ?? []).flatMap((value) => value.split(','))
      if (targets.length > PAGE_SIZE_MAX) {
        throw new AppError('VAL_001', `target names at most ${PAGE_SIZE_MAX} records`, { status: 400 })
      }
      const unknown = targets.filter((target) => !RECORD_REFERENCE.test(target))
      ignored.push(...unknown.map((target) => `target=${target} (a reference [type]/[id] to a record)`))
      if (ignored.length > 0 && isStrict(request)) {
        throw new AppError('VAL_001', `Unsupported: ${ignored.join('; ')}`, { status: 400 })
      }
      const records = await included(
        request,
        new Set(targets.filter((target) => RECORD_REFERENCE.test(target))),
      )
      const provenances = await provenancesOf(
        app.db,
        reader.organizationId,
        records.flatMap((entry) => (entry.resource ? [entry.resource] : [])),
      )
      const kept = targets.filter((target) => RECORD_REFERENCE.test(target))
      return send(
        reply,
        200,
        searchset({
          total: provenances.length,
          link: [
            {
              relation: 'self',
              url: `${base}/Provenance${queryString(kept.length > 0 ? { target: [kept.join(',')] } : {})}`,
            },
          ],
          entry: [
            ...provenances.map((provenance) => ({
              fullUrl: `${base}/Provenance/${provenance.id}`,
              resource: provenance,
              search: { mode: 'match' as const },
            })),
            ...(ignored.length > 0
              ? [{ resource: ignoredParameters(ignored), search: { mode: 'outcome' as const } }]
              : []),
          ],
        }),
      )
    },
  )

  // The system's history: the versions of every type's records the caller may search, newest change
  // first. A type the caller's roles or scopes do not reach is left out, not refused; each type's
  // versions are audited as its type history's are, the patients' as the call's own record.
  const historyTypes = types.filter((type) => type.versions)
  app.get(
    '/_history',
    {
      schema: { hide: true },
      config: {
        access: { allow: 'authenticated', audit: patientType && accessOf(patientType.restSearch).audit },
      },
    },
    async (request, reply) => {
      const principal = request.principal ?? (await app.authenticate(request))
      const query = searchQueryOf(request.query as Record<string, unknown>)
      const page = historyPage(query)
      const since = sinceOf(query)
      const reach = (page.page + 1) * page.size
      if (reach > SYSTEM_HISTORY_DEPTH) {
        throw new AppError(
          'VAL_001',
          `The system history pages only through its ${SYSTEM_HISTORY_DEPTH} newest versions: narrow it with _since`,
          { status: 400 },
        )
      }
      const listed: KeptResource<Resource>[] = []
      let total = 0
      for (const type of historyTypes) {
        if (!typeGrant(principal, type, 'search').allowed) continue
        const scope = await readScope(request, type, 'search')
        const kept = await type.versions?.all(
          app.db,
          principal.organizationId,
          { since, patient: scope.patient },
          { page: 0, size: reach },
        )
        if (!kept) continue
        const visible = kept.versions.filter((version) => inCategories(version.resource, scope.categories))
        total += kept.total - (kept.versions.length - visible.length)
        listed.push(...visible)
      }
      listed.sort(newestChangeFirst)
      const versions = listed.slice(page.page * page.size, reach)
      for (const type of historyTypes) {
        const resources = versions
          .filter((version) => version.resource.resourceType === type.type)
          .map((version) => version.resource)
        if (type === patientType) request.auditedIds = resources.map((resource) => Number(resource.id))
        else if (resources.length > 0) auditAs(request, type, resources, 'search', true)
      }
      const self = `${base}/_history${since ? `?_since=${encodeURIComponent(since.toISOString())}` : ''}`
      return send(reply, 200, historyBundle(base, self, page, { versions, total }))
    },
  )
}

/** How deep the system history pages: each type's versions are read up to the page asked for. */
const SYSTEM_HISTORY_DEPTH = 10_000

/** Newest change first; versions of one instant by type, id and version, so that pages never overlap. */
function newestChangeFirst(a: KeptResource<Resource>, b: KeptResource<Resource>): number {
  const [x, y] = [a.resource, b.resource]
  return (
    String(y.meta?.lastUpdated).localeCompare(String(x.meta?.lastUpdated)) ||
    x.resourceType.localeCompare(y.resourceType) ||
    Number(y.id) - Number(x.id) ||
    Number(y.meta?.versionId) - Number(x.meta?.versionId)
  )
}

/** The reference follower of `_include=<Type>:<name>` on `type`, if it has one. */
function followed(type: FhirResourceType, value: string) {
  const [source, name] = value.split(':')
  return source === type.type && name ? type.includes?.[name] : undefined
}

function queryString(query: SearchQuery): string {
  const pairs = Object.entries(query).flatMap(([name, values]) =>
    values.map((value): [string, string] => [name, value]),
  )
  return pairs.length > 0 ? `?${new URLSearchParams(pairs).toString()}` : ''
}

/**
 * A version as a history Bundle lists it: the first version shown a create, later ones updates, and a
 * deletion a DELETE without the resource.
 */
function historyEntry(base: string, { resource, deleted, created }: KeptResource<Resource>): BundleEntry {
  const version = resource.meta?.versionId
  const url = `${resource.resourceType}/${resource.id}`
  const response = { etag: `W/"${version}"`, lastModified: resource.meta?.lastUpdated }
  if (deleted) {
    return {
      fullUrl: `${base}/${url}`,
      request: { method: 'DELETE', url },
      response: { status: '204 No Content', ...response },
    }
  }
  return {
    fullUrl: `${base}/${url}`,
    resource,
    request: created ? { method: 'POST', url: resource.resourceType } : { method: 'PUT', url },
    response: { status: created ? '201 Created' : '200 OK', ...response },
  }
}

/** A page of versions as a history Bundle, with the link to the next page when there is one. */
function historyBundle(
  base: string,
  self: string,
  page: { page: number; size: number },
  kept: { versions: KeptResource<Resource>[]; total: number },
): Bundle {
  const pageUrl = (number: number) =>
    `${self}${self.includes('?') ? '&' : '?'}_count=${page.size}&_page=${number}`
  const more = (page.page + 1) * page.size < kept.total
  return {
    resourceType: 'Bundle',
    type: 'history',
    total: kept.total,
    link: [
      { relation: 'self', url: pageUrl(page.page) },
      ...(more ? [{ relation: 'next', url: pageUrl(page.page + 1) }] : []),
    ],
    ...(kept.versions.length > 0
      ? { entry: kept.versions.map((version) => historyEntry(base, version)) }
      : {}),
  }
}

/** `_since`: an instant (a date-time with its zone, or a date); undefined when absent. */
function sinceOf(query: SearchQuery): Date | undefined {
  const [value] = query._since ?? []
  if (value === undefined) return undefined
  const since = new Date(value)
  if (
    !/^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9:.]+(Z|[+-][0-9]{2}:[0-9]{2}))?$/.test(value) ||
    Number.isNaN(since.getTime())
  ) {
    throw new AppError('VAL_001', '_since must be an instant, e.g. 2026-11-28T10:00:00Z', { status: 400 })
  }
  return since
}

/** A searchset Bundle; an empty entry list is left out, as FHIR forbids empty arrays. */
function searchset(parts: Pick<Bundle, 'total' | 'link' | 'entry'>): Bundle {
  const { entry, ...rest } = parts
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    ...rest,
    ...(entry && entry.length > 0 ? { entry } : {}),
  }
}

export default fhirRoutes
