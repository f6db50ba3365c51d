import type { Readable } from 'node:stream'
import type { Binary } from '@medplum/fhirtypes'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { hasAnyRole, type Role } from '../../access/roles.js'
import { ROUTE_ACCESS, type RouteAccess } from '../../access/route-access.js'
import type { ScopeInteraction } from '../../access/smart-scopes.js'
import { AppError, forbidden, invalidField, invalidFields } from '../../errors.js'
import { checkDeclaredType, createDocument, type DocumentStorage } from '../documents/service.js'
import { type DocumentWithAuthor, readableDocument } from './document-rows.js'
import { operationOutcome } from './operation-outcome.js'
import type { ReadScope } from './resource-type.js'
import { scopeGrant } from './scopes.js'
import { droppedElements } from './stored-elements.js'
import { badRequest, checkBaseDefinitions } from './type-writer.js'
import { informational, preferredReturn } from './write-routes.js'
import { namesNothing, referencedId } from './written-references.js'

interface BinaryRoutesOptions {
  /** The FHIR base URL: a Binary created is located under it. */
  base: string
  documents: DocumentStorage
}

const FHIR_JSON = 'application/fhir+json'
const JSON_TYPES: ReadonlySet<string> = new Set([FHIR_JSON, 'application/json'])

// The bytes of a document follow the REST download's roles and audit rule; new ones, the upload's.
const DOWNLOAD = ROUTE_ACCESS['GET /api/documents/:documentId/download'] as RouteAccess
const UPLOAD = ROUTE_ACCESS['POST /api/patients/:patientId/documents'] as RouteAccess

/** What a document stored from a Binary alone is filed as: a Binary has no title or category. */
const BINARY_FIELDS = { title: 'Untitled document', category: 'OTHER' } as const

const SECURITY_CONTEXT = 'Binary.securityContext'
const NO_PATIENT = 'must be the patient the document is for, as Patient/<id>'

/** A Binary to store: its patient (the security context), its type and its bytes. */
interface SentBinary {
  patientId: number
  contentType: string
  bytes: AsyncIterable<Buffer> | Buffer[]
  /** The request's body when the bytes are read off it as they come: what a failure leaves of it is read off too. */
  stream?: Readable
}

/** The media type of a Content-Type header, without its parameters. */
const mediaTypeOf = (header: string | undefined) => (header ?? '').split(';')[0]?.trim().toLowerCase() ?? ''

/** The patient a security context names; a 422 when it names none. */
function patientIn(reference: string | undefined): number {
  const id = referencedId(reference === undefined ? undefined : { reference }, 'Patient')
  if (id === undefined) throw invalidField(SECURITY_CONTEXT, NO_PATIENT)
  return id
}

/**
 * A Binary resource sent as FHIR JSON: valid against R4, holding only what a document keeps (its
 * type, its bytes and the patient as security context), of a type documents take (422 otherwise).
 */
async function binaryResource(body: unknown): Promise<SentBinary> {
  const binary = body as Binary | undefined
  if (binary?.resourceType !== 'Binary') throw badRequest('The body must be a FHIR Binary resource (JSON)')
  await checkBaseDefinitions(binary)
  const patientId = patientIn(binary.securityContext?.reference)
  const kept: Binary = {
    resourceType: 'Binary',
    contentType: binary.contentType,
    securityContext: { reference: `Patient/${patientId}` },
    data: binary.data,
  }
  const dropped = droppedElements(binary, kept)
  if (dropped.length > 0) {
    throw invalidFields(dropped.map((path) => ({ path, message: 'cannot be stored by this server' })))
  }
  try {
    checkDeclaredType(binary.contentType)
  } catch (error) {
    throw error instanceof AppError ? invalidField('Binary.contentType', error.details) : error
  }
  if (binary.data === undefined)
    throw invalidField('Binary.data', 'is required: the document’s bytes, base64')
  return { patientId, contentType: binary.contentType, bytes: [Buffer.from(binary.data, 'base64')] }
}

/**
 * Base64 in JSON is a third larger than the bytes and is held whole in memory (ours and the
 * client's): past this size a Binary is served only as its raw bytes.
 */
export const BINARY_JSON_MAX_BYTES = 5 * 1024 * 1024

const notFound = (details: string) => new AppError('RES_001', details)

/**
 * Binary at /fhir/R4/Binary/:id: the bytes of a DocumentReference's attachment, raw (in their stored
 * content type) or, asked for with `Accept: application/fhir+json`, as a Binary resource; a POST
 * stores a new document of the patient its security context names. Registered inside the FHIR
 * plugin, so its errors are OperationOutcomes like every other FHIR answer.
 */
const binaryRoutes: FastifyPluginAsync<BinaryRoutesOptions> = async (app, { base, documents }) => {
  const { store } = documents

  /**
   * The caller, with the roles of the REST route of the same documents and a SMART scope granting
   * the interaction with Binary or DocumentReference: the bytes are the content of a DocumentReference.
   */
  async function grantedScope(
    request: FastifyRequest,
    access: RouteAccess,
    interaction: ScopeInteraction,
  ): Promise<ReadScope> {
    const principal = request.principal ?? (await app.authenticate(request))
    const roles = access.allow as readonly Role[]
    if (!hasAnyRole(principal.authorities, roles)) {
      const doing = interaction === 'read' ? 'Reading' : 'Creating'
      throw forbidden(`${doing} Binary requires one of the roles: ${roles.join(', ')}`)
    }
    const byBinary = scopeGrant(principal, 'Binary', interaction)
    const grant = byBinary.allowed ? byBinary : scopeGrant(principal, 'DocumentReference', interaction)
    if (!grant.allowed) throw forbidden(grant.reason)
    if (interaction === 'create' && grant.categories !== undefined) {
      throw forbidden('Category scopes do not allow writing Binary')
    }
    const patient = grant.patient === undefined ? undefined : Number(grant.patient)
    if (patient !== undefined && !Number.isSafeInteger(patient))
      throw forbidden('The launch patient is not a patient id')
    return { actor: principal, patient }
  }

  async function readOne(request: FastifyRequest<{ Params: { id: string } }>) {
    const scope = await grantedScope(request, DOWNLOAD, 'read')
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

  // A Binary is created from its raw bytes, streamed as a multipart upload's file is: every type
  // other than FHIR JSON reaches the route as the request's stream, refused there unless documents take it.
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload))

  /** The Binary a create sends: a FHIR JSON resource, or the raw bytes with `X-Security-Context`. */
  async function sentBinary(request: FastifyRequest): Promise<SentBinary> {
    const contentType = mediaTypeOf(request.headers['content-type'])
    if (JSON_TYPES.has(contentType)) return binaryResource(request.body)
    checkDeclaredType(contentType)
    const context = request.headers['x-security-context']
    const stream = request.body as Readable
    return {
      patientId: patientIn(typeof context === 'string' ? context.trim() : undefined),
      contentType,
      // Not destroyed when the bytes are refused part way: that would close the connection unanswered.
      bytes: stream.iterator({ destroyOnReturn: false }),
      stream,
    }
  }

  /**
   * A new document of a patient, stored as an upload of its bytes is: under the upload's roles and
   * audit rule. What a Binary cannot say is filed as BINARY_FIELDS.
   */
  app.post(
    '/Binary',
    { schema: { hide: true }, config: { access: UPLOAD, changeStatus: 201 } },
    async (request, reply) => {
      const scope = await grantedScope(request, UPLOAD, 'create')
      const sent = await sentBinary(request)
      if (scope.patient !== undefined && scope.patient !== sent.patientId) {
        throw forbidden('The token is limited to its launch patient’s records')
      }
      const document = {
        patientId: sent.patientId,
        fields: BINARY_FIELDS,
        contentType: sent.contentType,
        fileName: undefined,
      }
      let stored: { id: number; version: number; updated_at: Date }
      try {
        stored = await createDocument(app.db, documents, scope.actor, document, sent.bytes)
      } catch (error) {
        // The rest of the body must be read off the connection, or the request would hang.
        sent.stream?.resume()
        if (error instanceof AppError && error.status === 404) {
          throw namesNothing(SECURITY_CONTEXT, `Patient/${sent.patientId}`)
        }
        throw error
      }
      request.auditedIds = [stored.id]
      reply
        .header('location', `${base}/Binary/${stored.id}/_history/${stored.version}`)
        .header('etag', `W/"${stored.version}"`)
        .header('last-modified', stored.updated_at.toUTCString())
      if (preferredReturn(String(request.headers.prefer ?? '')) === 'minimal') return reply.code(201).send()
      // The bytes just sent are not sent back: the DocumentReference describes them.
      const outcome = informational(
        `Binary/${stored.id} created at version ${stored.version}: the content of DocumentReference/${stored.id}`,
      )
      return reply.code(201).type(`${FHIR_JSON}; charset=utf-8`).send(outcome)
    },
  )
}

export default binaryRoutes
