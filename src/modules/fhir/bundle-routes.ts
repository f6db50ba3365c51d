import type { Bundle, BundleEntry, OperationOutcome, Resource } from '@medplum/fhirtypes'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Trx } from '../../../db/database.js'
import type { RouteKey } from '../../access/route-access.js'
import { auditChange, withChangeAuditOf } from '../../audit/change-audit.js'
import { AppError, forbidden } from '../../errors.js'
import { STATUS_CODES } from '../../http/status-codes.js'
import type { Principal } from '../../identity/principal.js'
import { transactionWithEvents } from '../../outbox/doorbell.js'
import { toAppError } from '../../plugins/error-handler.js'
import { accessOf, typeGrant } from './access.js'
import { eachReference, groupedCreates } from './grouped-creates.js'
import { operationOutcome } from './operation-outcome.js'
import { recordId } from './record-id.js'
import type { FhirResourceType } from './resource-type.js'
import { checkCategories } from './scopes.js'
import { type SearchQuery, searchQueryOf } from './search-params.js'
import { badRequest, type TypeWriter, type WriteCall, type WriteResult } from './type-writer.js'
import { JSON_PATCH, preferredReturn } from './write-routes.js'

interface BundleOptions {
  base: string
  types: readonly FhirResourceType[]
  writers: ReadonlyMap<string, TypeWriter>
  limits: { entries: number; bytes: number }
  send(reply: FastifyReply, status: number, body: Resource | undefined): FastifyReply
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

// A transaction runs its entries in this order, whatever their order in the Bundle (FHIR R4 3.1.0.11.2).
const TRANSACTION_ORDER: Record<Method, number> = { DELETE: 0, POST: 1, PUT: 2, PATCH: 2, GET: 3 }

/** One entry of a request Bundle, as read from it. */
interface Entry {
  index: number
  method: Method
  type: FhirResourceType
  /** The id of `Type/id`, or the criteria of `Type?…`; neither for `Type` alone. */
  id?: string
  criteria?: SearchQuery
  fullUrl?: string
  resource?: Resource
  ifMatch?: string
  ifNoneExist?: SearchQuery
}

/** A failure of one entry: its index and the error, for the OperationOutcome that names it. */
class EntryError extends Error {
  constructor(
    readonly index: number,
    readonly error: AppError,
  ) {
    super(error.details)
  }
}

/** The error's fields as expressions within the Bundle (`Bundle.entry[3].resource.birthDate`). */
function withinEntry(index: number, error: AppError): AppError {
  const at = `Bundle.entry[${index}]`
  const fields = (error.fields ?? []).map(({ path, message }) => ({
    path: /^[A-Z][A-Za-z]*(\.|$)/.test(path) ? `${at}.resource${path.replace(/^[A-Z][A-Za-z]*/, '')}` : at,
    message,
  }))
  const named = fields.length > 0 ? fields : [{ path: at, message: error.details }]
  const options = { status: error.status, message: error.message, fields: named }
  return new AppError(error.code, `${at}: ${error.details}`, options as never)
}

const statusLine = (status: number) => `${status} ${STATUS_CODES[status] ?? ''}`.trim()

/**
 * `POST /fhir/R4` with a batch or transaction Bundle. A transaction is one database transaction:
 * all of its entries or none, run in FHIR's order, `urn:uuid:` full URLs and conditional
 * references (`Patient?identifier=…`) resolved across entries, consecutive creates of one type
 * written in one statement (grouped-creates.ts); a failed entry rolls it back and the
 * OperationOutcome names the entry. A batch runs each entry on its own. Every entry goes through
 * the same writes as the type's own routes, under the roles, scopes and audit rule of its REST
 * route; a GET entry reads one resource by id.
 */
export function bundleRoutes(app: FastifyInstance, options: BundleOptions): void {
  const { base, types, writers, limits, send } = options

  function typeOf(name: string, index: number): FhirResourceType {
    const type = types.find((candidate) => candidate.type === name)
    if (!type) throw new EntryError(index, badRequest(`${name} is not a resource type served here`))
    return type
  }

  function parseEntry(raw: BundleEntry, index: number): Entry {
    const method = raw.request?.method as Method | undefined
    const url = raw.request?.url
    if (!method || !(method in TRANSACTION_ORDER) || typeof url !== 'string') {
      throw new EntryError(index, badRequest('request.method and request.url are required'))
    }
    const relative = url.startsWith(`${base}/`) ? url.slice(base.length + 1) : url
    const [path = '', query] = relative.split('?', 2) as [string, string | undefined]
    const [typeName = '', id, ...rest] = path.split('/')
    if (rest.length > 0 || (id !== undefined && query !== undefined)) {
      throw new EntryError(
        index,
        badRequest(`request.url ${url} is not [type], [type]/[id] or [type]?[search]`),
      )
    }
    const header = (value: string | undefined) =>
      value === undefined ? undefined : searchQueryOf(Object.fromEntries(new URLSearchParams(value)))
    return {
      index,
      method,
      type: typeOf(typeName, index),
      ...(id === undefined ? {} : { id }),
      ...(query === undefined ? {} : { criteria: header(query) }),
      ...(raw.fullUrl === undefined ? {} : { fullUrl: raw.fullUrl }),
      ...(raw.resource === undefined ? {} : { resource: raw.resource }),
      ...(raw.request?.ifMatch === undefined ? {} : { ifMatch: raw.request.ifMatch }),
      ...(raw.request?.ifNoneExist === undefined ? {} : { ifNoneExist: header(raw.request.ifNoneExist) }),
    }
  }

  /** The entries of a request Bundle, refused whole when the Bundle is not one this endpoint takes. */
  function entriesOf(body: unknown): { kind: 'batch' | 'transaction'; entries: BundleEntry[] } {
    const bundle = body as Bundle | undefined
    if (bundle?.resourceType !== 'Bundle')
      throw badRequest('POST /fhir/R4 takes a batch or transaction Bundle')
    if (bundle.type !== 'batch' && bundle.type !== 'transaction') {
      throw badRequest(
        `A Bundle of type ${String(bundle.type)} is not processed here: batch or transaction only`,
      )
    }
    const raw = bundle.entry ?? []
    if (raw.length > limits.entries) {
      throw new AppError(
        'VAL_001',
        `A Bundle may hold at most ${limits.entries} entries; this one has ${raw.length}`,
        {
          status: 413,
        },
      )
    }
    const nested = raw.findIndex((entry) => entry.resource?.resourceType === 'Bundle')
    if (nested >= 0) throw badRequest(`Bundle.entry[${nested}] is a Bundle: nested Bundles are refused`)
    return { kind: bundle.type, entries: raw }
  }

  /** The route whose roles and audit rule an entry follows. */
  function routeOf(entry: Entry): RouteKey {
    if (entry.method === 'GET') return entry.type.restRead
    const routes = writerOf(entry).routes
    const route =
      entry.method === 'POST' ? routes.create : entry.method === 'DELETE' ? routes.delete : routes.update
    if (!route)
      throw new EntryError(
        entry.index,
        new AppError('RES_001', `${entry.type.type} is not deleted here`, { status: 405 }),
      )
    return route
  }

  function writerOf(entry: Entry): TypeWriter {
    const writer = writers.get(entry.type.type)
    if (!writer) {
      throw new EntryError(
        entry.index,
        new AppError('RES_001', `${entry.type.type} is read-only here`, { status: 405 }),
      )
    }
    return writer
  }

  /** A GET entry: one resource by id, with the caller's rights (as a read of the type's route). */
  async function readEntry(entry: Entry, principal: Principal, trx: Trx): Promise<WriteResult> {
    if (entry.id === undefined) throw badRequest('A GET entry reads one resource: [type]/[id]')
    const grant = typeGrant(principal, entry.type, 'read')
    if (!grant.allowed) throw forbidden(grant.reason)
    const patient = grant.patient === undefined ? undefined : Number(grant.patient)
    const resource = await entry.type.read(
      trx,
      { actor: principal, patient },
      recordId(entry.id, entry.type.type),
    )
    checkCategories(resource, grant.categories)
    return { status: 200, resource }
  }

  /** A PATCH entry carries its JSON Patch as a Binary resource (FHIR R4 3.1.0.11.1). */
  function patchOf(entry: Entry): unknown {
    const binary = entry.resource as
      | { resourceType?: string; contentType?: string; data?: string }
      | undefined
    if (binary?.resourceType !== 'Binary' || binary.contentType !== JSON_PATCH || !binary.data) {
      throw badRequest(`A PATCH entry carries a Binary of contentType ${JSON_PATCH}`)
    }
    try {
      return JSON.parse(Buffer.from(binary.data, 'base64').toString('utf8'))
    } catch {
      throw badRequest('The PATCH entry’s Binary does not hold JSON')
    }
  }

  async function runEntry(entry: Entry, call: WriteCall): Promise<WriteResult> {
    if (entry.method === 'GET') return readEntry(entry, call.principal, call.db as Trx)
    const writer = writerOf(entry)
    switch (entry.method) {
      case 'POST':
        return writer.create(call, entry.resource, entry.ifNoneExist)
      case 'PUT':
        if (entry.id !== undefined) return writer.update(call, entry.id, entry.resource)
        if (entry.criteria) return writer.conditionalUpdate(call, entry.criteria, entry.resource)
        throw badRequest('A PUT entry names [type]/[id] or [type]?[search]')
      case 'PATCH':
        if (entry.id === undefined) throw badRequest('A PATCH entry names [type]/[id]')
        return writer.patch(call, entry.id, patchOf(entry))
      case 'DELETE': {
        const { delete: deleteOne, conditionalDelete } = writer
        if (!deleteOne || !conditionalDelete)
          throw new AppError('RES_001', 'Not deleted here', { status: 405 })
        if (entry.id !== undefined) return deleteOne(call, entry.id)
        if (entry.criteria) return conditionalDelete(call, entry.criteria)
        throw badRequest('A DELETE entry names [type]/[id] or [type]?[search]')
      }
    }
  }

  /**
   * Runs one entry in `trx` under the audit rule of its REST route: its change writes the record
   * with it; an entry that changed nothing (a read, a write of what was already stored) writes its
   * own in the same transaction.
   */
  async function audited(request: FastifyRequest, principal: Principal, entry: Entry, trx: Trx) {
    const route = routeOf(entry)
    const rule = accessOf(route).audit
    const success = entry.method === 'POST' ? 201 : entry.method === 'DELETE' ? 204 : 200
    const call: WriteCall = { db: trx, principal, request, ifMatch: entry.ifMatch }
    if (!rule) return runEntry(entry, call)
    const audit = {
      fields: {
        occurred_at: new Date(),
        organization_id: principal.organizationId,
        user_id: principal.userId,
        action: rule.action,
        resource_type: rule.resourceType,
        patient_id: null,
        outcome: 'SUCCESS',
        status_code: success,
        request_id: request.id,
      },
      writtenStatus: null as number | null,
    }
    return withChangeAuditOf(audit, async () => {
      const result = await runEntry(entry, call)
      if (audit.writtenStatus !== result.status) {
        await auditChange(trx, result.resource ? [Number(result.resource.id)] : [], result.status)
      }
      return result
    })
  }

  /**
   * The response entry of a result, its resource as `Prefer` asks; no fullUrl, since two entries may
   * answer the same version (a PUT and a GET of one record) and a Bundle's full URLs must differ.
   */
  function responseEntry(request: FastifyRequest, { status, resource }: WriteResult): BundleEntry {
    const version = resource?.meta?.versionId
    const preferred = preferredReturn(String(request.headers.prefer ?? ''))
    return {
      ...(resource && preferred === 'representation' ? { resource } : {}),
      response: {
        status: statusLine(status),
        ...(resource
          ? {
              location: `${resource.resourceType}/${resource.id}/_history/${version}`,
              etag: `W/"${version}"`,
              ...(resource.meta?.lastUpdated ? { lastModified: resource.meta.lastUpdated } : {}),
            }
          : {}),
      },
    }
  }

  /** `urn:uuid:` references to entries created earlier, and conditional ones, as `Type/id`. */
  async function resolveReferences(
    entry: Entry,
    created: Map<string, string>,
    principal: Principal,
    trx: Trx,
  ) {
    const pending: { reference: string }[] = []
    eachReference(entry.resource, (holder) => pending.push(holder))
    for (const holder of pending) {
      const local = created.get(holder.reference)
      if (local) {
        holder.reference = local
        continue
      }
      const [typeName = '', query] = holder.reference.split('?', 2)
      if (query === undefined || !/^[A-Z][A-Za-z]+$/.test(typeName)) continue
      const type = typeOf(typeName, entry.index)
      const grant = typeGrant(principal, type, 'search')
      if (!grant.allowed) throw forbidden(grant.reason)
      const patient = grant.patient === undefined ? undefined : Number(grant.patient)
      const criteria = searchQueryOf(Object.fromEntries(new URLSearchParams(query)))
      const page = await type.search(trx, { actor: principal, patient }, criteria, {
        after: undefined,
        size: 2,
        order: { name: '_id', descending: false },
      })
      if (page.resources.length !== 1) {
        const found = page.resources.length === 0 ? 'matches nothing' : 'matches more than one resource'
        throw new AppError('RES_003', `The conditional reference ${holder.reference} ${found}`, {
          status: 412,
        })
      }
      holder.reference = `${typeName}/${page.resources[0]?.id}`
    }
  }

  /** The order a transaction runs its entries in: FHIR's, and a created entry before those that reference it. */
  function transactionOrder(entries: Entry[]): Entry[] {
    const sorted = [...entries].sort((a, b) => TRANSACTION_ORDER[a.method] - TRANSACTION_ORDER[b.method])
    const posts = sorted.filter((entry) => entry.method === 'POST')
    const urnsOf = (entry: Entry) => {
      const urns: string[] = []
      eachReference(
        entry.resource,
        ({ reference }) => reference.startsWith('urn:uuid:') && urns.push(reference),
      )
      return urns
    }
    const ordered: Entry[] = []
    const placed = new Set<string>()
    const waiting = [...posts]
    const creates = new Set(posts.map((entry) => entry.fullUrl).filter((url) => url !== undefined))
    while (waiting.length > 0) {
      const next = waiting.findIndex((entry) =>
        urnsOf(entry).every((urn) => !creates.has(urn) || placed.has(urn) || urn === entry.fullUrl),
      )
      if (next < 0)
        throw new EntryError(
          waiting[0]?.index ?? 0,
          badRequest('The created entries reference each other in a cycle'),
        )
      const [entry] = waiting.splice(next, 1) as [Entry]
      ordered.push(entry)
      if (entry.fullUrl) placed.add(entry.fullUrl)
    }
    return [
      ...sorted.filter((entry) => TRANSACTION_ORDER[entry.method] < 1),
      ...ordered,
      ...sorted.filter((entry) => TRANSACTION_ORDER[entry.method] > 1),
    ]
  }

  /**
   * The resource of a create entry that is written as sent: one whose references resolveReferences
   * leaves as they are (none to another entry's full URL, none conditional), with no If-None-Exist
   * that may find it written already.
   */
  function createdAsSent(entry: Entry, fullUrls: ReadonlySet<string>): Resource | undefined {
    // Anything but an object is refused by the create itself (400).
    if (entry.method !== 'POST' || !entry.resource || typeof entry.resource !== 'object') return undefined
    if (entry.ifNoneExist) return undefined
    let resolved = false
    eachReference(entry.resource, ({ reference }) => {
      resolved ||= fullUrls.has(reference) || reference.includes('?')
    })
    return resolved ? undefined : entry.resource
  }

  /** Starts the checks of the entry a transaction writes next, if it creates a resource as sent. */
  function checkAhead(request: FastifyRequest, entry: Entry | undefined, fullUrls: ReadonlySet<string>) {
    const resource = entry && createdAsSent(entry, fullUrls)
    if (resource) writers.get(entry.type.type)?.checkAhead(request, resource)
  }

  async function transaction(request: FastifyRequest, principal: Principal, raw: BundleEntry[]) {
    const entries = raw.map(parseEntry)
    const fullUrls = new Set(entries.flatMap((entry) => (entry.fullUrl ? [entry.fullUrl] : [])))
    const results = new Map<number, WriteResult>()
    await transactionWithEvents(app.db, async (trx) => {
      const created = new Map<string, string>()
      const ordered = transactionOrder(entries)
      const group = groupedCreates(trx)
      try {
        for (const [position, entry] of ordered.entries()) {
          // The next entry's resource is checked while this entry's writes wait for the database.
          checkAhead(request, ordered[position + 1], fullUrls)
          await group.run(entry, async () => {
            try {
              await resolveReferences(entry, created, principal, trx)
              const result = await audited(request, principal, entry, trx)
              results.set(entry.index, result)
              if (entry.fullUrl && result.resource) {
                created.set(entry.fullUrl, `${result.resource.resourceType}/${result.resource.id}`)
              }
            } catch (error) {
              throw error instanceof EntryError ? error : new EntryError(entry.index, asAppError(error))
            }
          })
        }
        await group.write()
      } finally {
        group.close()
      }
    })
    return entries.map((entry) => responseEntry(request, results.get(entry.index) as WriteResult))
  }

  async function batch(request: FastifyRequest, principal: Principal, raw: BundleEntry[]) {
    const responses: BundleEntry[] = []
    for (const [index, rawEntry] of raw.entries()) {
      try {
        const entry = parseEntry(rawEntry, index)
        const result = await transactionWithEvents(app.db, (trx) => audited(request, principal, entry, trx))
        responses.push(responseEntry(request, result))
      } catch (error) {
        const failure = error instanceof EntryError ? error.error : asAppError(error)
        responses.push({
          response: {
            status: statusLine(failure.status),
            outcome: operationOutcome(failure.status, failure.details, failure.fields) as OperationOutcome,
          },
        })
      }
    }
    return responses
  }

  function asAppError(error: unknown): AppError {
    const known = toAppError(error, limits.bytes)
    if (known) return known
    throw error
  }

  const processBundle = async (request: FastifyRequest, reply: FastifyReply) => {
    const principal = request.principal ?? (await app.authenticate(request))
    const { kind, entries } = entriesOf(request.body)
    if (kind === 'batch') {
      return send(reply, 200, {
        resourceType: 'Bundle',
        type: 'batch-response',
        entry: await batch(request, principal, entries),
      })
    }
    try {
      const entry = await transaction(request, principal, entries)
      return send(reply, 200, { resourceType: 'Bundle', type: 'transaction-response', entry })
    } catch (error) {
      if (error instanceof EntryError) throw withinEntry(error.index, error.error)
      throw error
    }
  }
  // The base URL; with or without its trailing slash alike, as every route here.
  app.post('/', { schema: { hide: true }, bodyLimit: limits.bytes }, processBundle)
}
