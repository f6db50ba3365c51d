import type { Readable } from 'node:stream'
import type { Binary } from '@medplum/fhirtypes'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { hasAnyRole, type Role } from '../../access/roles.js'
import { ROUTE_ACCESS, type RouteAccess } from '../../access/route-access.js'
import { AppError, forbidden } from '../../errors.js'
import { type DocumentWithAuthor, readableDocument } from './document-reference.js'
import { operationOutcome } from './operation-outcome.js'
import type { ReadScope } from './resource-type.js'
import { scopeGrant } from './scopes.js'

/**
 * What Binary needs of the documents area's store (stated here: an area reaches another only
 * through its service, and the store is passed in by app.ts).
 */
export interface DocumentBytes {
  read(key: string): Promise<Readable>
}

interface BinaryRoutesOptions {
  store: DocumentBytes
}

const FHIR_JSON = 'application/fhir+json'

// The bytes of a document follow the REST download's roles and audit rule.
const DOWNLOAD = ROUTE_ACCESS['GET /api/documents/:documentId/download'] as RouteAccess

/**
 * Base64 in JSON is a third larger than the bytes and is held whole in memory (ours and the
 * client's): past this size a Binary is served only as its raw bytes.
 */
export const BINARY_JSON_MAX_BYTES = 5 * 1024 * 1024

const notFound = (details: string) => new AppError('RES_001', details)

/**
 * Binary at /fhir/R4/Binary/:id: the bytes of a DocumentReference's attachment, raw (in their stored
 * content type) or, asked for with `Accept: application/fhir+json`, as a Binary resource. Registered
 * inside the FHIR plugin, so its errors are OperationOutcomes like every other FHIR answer.
 */
const binaryRoutes: FastifyPluginAsync<BinaryRoutesOptions> = async (app, { store }) => {
  const roles = DOWNLOAD.allow as readonly Role[]

  /** The caller, with the download's roles and a SMART scope granting Binary or DocumentReference. */
  async function readScope(request: FastifyRequest): Promise<ReadScope> {
    const principal = request.principal ?? (await app.authenticate(request))
    if (!hasAnyRole(principal.authorities, roles)) {
      throw forbidden(`Reading Binary requires one of the roles: ${roles.join(', ')}`)
    }
    // The bytes are the content of a DocumentReference: a scope to read either reads them.
    const byBinary = scopeGrant(principal, 'Binary', 'read')
    const grant = byBinary.allowed ? byBinary : scopeGrant(principal, 'DocumentReference', 'read')
    if (!grant.allowed) throw forbidden(grant.reason)
    const patient = grant.patient === undefined ? undefined : Number(grant.patient)
    if (patient !== undefined && !Number.isSafeInteger(patient))
      throw forbidden('The launch patient is not a patient id')
    return { actor: principal, patient }
  }

  async function readOne(request: FastifyRequest<{ Params: { id: string } }>) {
    const scope = await readScope(request)
    const text = request.params.id
    const id = Number(text)
    if (!/^[1-9][0-9]{0,9}$/.test(text) || id > 2_147_483_647) throw notFound(`Binary/${text} not found`)
    request.auditedIds = [id]
    return readableDocument(app.db, scope, id)
  }

  const wantsFhir = (request: FastifyRequest) =>
    String(request.headers.accept ?? '')
      .split(',')
      .some((type) => type.trim().toLowerCase().startsWith(FHIR_JSON))

  async function sendBinary(request: FastifyRequest, reply: FastifyReply, document: DocumentWithAuthor) {
    reply.header('cache-control', 'private, no-store')
    if (wantsFhir(request)) return sendResource(request, reply, document)
    // The same representation as the REST download, and the same ETag (the SHA-256 of the bytes).
    const etag = `"${document.sha256}"`
    reply.header('etag', etag)
    if (request.headers['if-none-match'] === etag) return reply.code(304).send()
    return (
      reply
        .header('content-type', document.content_type)
        .header('content-length', Number(document.size_bytes))
        // Never rendered in our origin; the file name is the DocumentReference's attachment.title.
        .header('content-disposition', 'attachment')
        .header('x-content-type-options', 'nosniff')
        .send(await store.read(document.storage_key))
    )
  }

  async function sendResource(request: FastifyRequest, reply: FastifyReply, document: DocumentWithAuthor) {
    const size = Number(document.size_bytes)
    if (size > BINARY_JSON_MAX_BYTES) {
      // Not an error of the request: this representation is not offered at this size, the raw one is.
      return reply
        .code(406)
        .type(`${FHIR_JSON}; charset=utf-8`)
        .send(
          operationOutcome(
            406,
            `Binary/${document.id} has ${size} bytes; as FHIR JSON only up to ${BINARY_JSON_MAX_BYTES}. Ask without Accept: ${FHIR_JSON} for the raw bytes`,
          ),
        )
    }
    const etag = `W/"${document.version}"`
    reply.header('etag', etag)
    if (request.headers['if-none-match'] === etag) return reply.code(304).send()
    const chunks: Buffer[] = []
    for await (const chunk of await store.read(document.storage_key)) chunks.push(chunk as Buffer)
    const binary: Binary = {
      resourceType: 'Binary',
      id: String(document.id),
      meta: { versionId: String(document.version), lastUpdated: document.updated_at.toISOString() },
      contentType: document.content_type,
      // Access to the bytes is decided by the DocumentReference they belong to.
      securityContext: { reference: `DocumentReference/${document.id}` },
      data: Buffer.concat(chunks).toString('base64'),
    }
    return reply.code(200).type(`${FHIR_JSON}; charset=utf-8`).send(binary)
  }

  const route = { schema: { hide: true }, config: { access: DOWNLOAD } }

  app.get<{ Params: { id: string } }>('/Binary/:id', route, async (request, reply) =>
    sendBinary(request, reply, await readOne(request)),
  )
  app.get<{ Params: { id: string; vid: string } }>(
    '/Binary/:id/_history/:vid',
    route,
    async (request, reply) => {
      const document = await readOne(request)
      if (String(document.version) !== request.params.vid) {
        throw notFound(
          `Binary/${document.id} version ${request.params.vid} is not kept; the current version is ${document.version}`,
        )
      }
      return sendBinary(request, reply, document)
    },
  )
}

export default binaryRoutes
