import multipart from '@fastify/multipart'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { IfMatchHeaders } from '../../../schemas/common.js'
import {
  DocumentDeletedEnvelope,
  DocumentEnvelope,
  DocumentFields,
  DocumentIdParams,
  DocumentListQuery,
  DocumentPageEnvelope,
  DocumentUploadBody,
  PatientIdParams,
} from '../../../schemas/documents.js'
import { AppError } from '../../errors.js'
import { ok } from '../../http/envelope.js'
import { listOrSync } from '../../http/list-or-sync.js'
import { principalOf } from '../../http/request-principal.js'
import { errorResponse, recordErrors } from '../../http/responses.js'
import { sendStoredBytes } from '../../http/stored-bytes.js'
import { parseRange } from '../../lib/byte-range.js'
import { STREAMED_BODY } from '../../plugins/validation.js'
import { contentDisposition } from './download.js'
import {
  deleteDocument,
  findDocument,
  listDocuments,
  sweepDocuments,
  UPLOAD_PARTS,
  uploadDocument,
} from './service.js'
import type { DocumentStore } from './store.js'

const tags = ['Documents']
const patientErrors = recordErrors('patient', 'Patient')
const documentErrors = recordErrors('document', 'Document')
/** The headers of a download: what the bytes are and which of them were sent. */
const downloadHeaders = {
  ETag: {
    type: 'string',
    description: 'The SHA-256 of the whole document, quoted: send it in `If-None-Match`',
  },
  'Accept-Ranges': { type: 'string', description: '`bytes`: a single `Range` may be asked for' },
  'Content-Disposition': { type: 'string', description: '`attachment`, with the stored file name' },
  'Content-Range': { type: 'string', description: '`bytes first-last/size` (206), or `bytes */size` (416)' },
}

/** A download answers with the document's stored content type, whatever it was uploaded as. */
const binary = (description: string, headers: (keyof typeof downloadHeaders)[]) => ({
  description,
  headers: Object.fromEntries(headers.map((name) => [name, downloadHeaders[name]])),
  content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
})

/** The request headers a download reads. */
const DownloadHeaders = Type.Object({
  range: Type.Optional(
    Type.String({
      maxLength: 200,
      description:
        'One byte range, `bytes=first-last`, `bytes=first-` or `bytes=-suffix` (206); other forms get the whole document',
    }),
  ),
  'if-none-match': Type.Optional(
    Type.String({
      maxLength: 1024,
      description: 'The ETag held: 304 without a body when it is still current',
    }),
  ),
})

// Housekeeping runs at start and then this often (interrupted uploads, purge after retention).
const SWEEP_INTERVAL_MS = 10 * 60_000

interface DocumentRoutesOptions {
  store: DocumentStore
  maxUploadBytes: number
  retentionDays: number
}

const documentRoutes: FastifyPluginAsyncTypebox<DocumentRoutesOptions> = async (
  app,
  { store, maxUploadBytes, retentionDays },
) => {
  await app.register(multipart, {
    limits: { fileSize: maxUploadBytes, ...UPLOAD_PARTS },
  })

  const sweep = () =>
    sweepDocuments(app.db, store, retentionDays).catch((error: Error) =>
      app.log.error({ err: { message: error.message } }, 'document housekeeping failed'),
    )
  app.addHook('onReady', async () => {
    void sweep()
  })
  const timer = setInterval(sweep, SWEEP_INTERVAL_MS)
  timer.unref()
  app.addHook('onClose', async () => clearInterval(timer))

  app.post(
    '/patients/:patientId/documents',
    {
      schema: {
        tags,
        operationId: 'uploadDocument',
        summary: 'Upload a document for a patient (multipart/form-data)',
        consumes: ['multipart/form-data'],
        params: PatientIdParams,
        body: { ...DocumentUploadBody, [STREAMED_BODY]: true },
        response: {
          201: DocumentEnvelope,
          ...patientErrors,
        },
      },
    },
    async (request, reply) => {
      if (!request.isMultipart()) {
        throw new AppError('VAL_001', 'Send multipart/form-data', {
          status: 415,
          message: 'Unsupported media type',
        })
      }
      const document = await uploadDocument(
        app.db,
        store,
        principalOf(request),
        request.params.patientId,
        request.parts(),
        // The fields are text, checked as a query string is (the validation plugin's rules for text).
        {
          maxBytes: maxUploadBytes,
          validateFields: request.compileValidationSchema(DocumentFields, 'querystring'),
        },
      )
      request.auditedIds = [document.id]
      return reply.code(201).send(ok('Document stored', document))
    },
  )

  app.get(
    '/patients/:patientId/documents',
    {
      schema: {
        tags,
        operationId: 'listPatientDocuments',
        summary: "A patient's documents (metadata), newest first",
        description:
          'With `updatedSince` or `cursor`, a sync page: documents stored or changed since, oldest change first, and tombstones of deleted ones.',
        params: PatientIdParams,
        querystring: DocumentListQuery,
        response: {
          200: DocumentPageEnvelope,
          ...patientErrors,
        },
      },
    },
    async (request) => {
      const { patientId } = request.params
      return listOrSync(request, 'Documents retrieved', (db, actor, query) =>
        listDocuments(db, actor, patientId, query),
      )
    },
  )

  app.get(
    '/documents/:documentId/download',
    {
      schema: {
        tags,
        operationId: 'downloadDocument',
        summary: 'Download the bytes of a document',
        description:
          'Streams the stored bytes with their content type, Content-Length, Content-Disposition: attachment and an ETag (the SHA-256). Supports a single Range (206) and If-None-Match (304).',
        params: DocumentIdParams,
        headers: DownloadHeaders,
        response: {
          200: binary('The whole document, in its stored content type', [
            'ETag',
            'Accept-Ranges',
            'Content-Disposition',
          ]),
          206: binary('The requested byte range', [
            'ETag',
            'Accept-Ranges',
            'Content-Disposition',
            'Content-Range',
          ]),
          304: {
            description: 'Unchanged (If-None-Match matched the ETag)',
            type: 'null',
            headers: { ETag: downloadHeaders.ETag },
          },
          ...documentErrors,
          416: {
            ...errorResponse(416, 'The range is outside the document (VAL_001)'),
            headers: { 'Content-Range': downloadHeaders['Content-Range'] },
          },
        },
      },
    },
    async (request, reply) => {
      const document = await findDocument(app.db, principalOf(request), request.params.documentId)
      request.auditedIds = [document.id]
      const size = Number(document.size_bytes)
      const etag = `"${document.sha256}"`
      reply.header('etag', etag).header('accept-ranges', 'bytes').header('cache-control', 'private, no-store')
      if (request.headers['if-none-match'] === etag) return reply.code(304).send()
      const range = parseRange(request.headers.range, size)
      if (range === 'unsatisfiable') {
        reply.header('content-range', `bytes */${size}`)
        throw new AppError('VAL_001', `The document has ${size} bytes`, {
          status: 416,
          message: 'Range not satisfiable',
        })
      }
      reply
        .header('content-type', document.content_type)
        .header('content-disposition', contentDisposition(document.file_name))
        .header('x-content-type-options', 'nosniff')
      return sendStoredBytes(reply, size, range, (part) => store.read(document.storage_key, part))
    },
  )

  app.delete(
    '/documents/:documentId',
    {
      schema: {
        tags,
        operationId: 'deleteDocument',
        summary: 'Delete a document',
        description:
          'It disappears from listings and downloads at once (sync pages show a tombstone); its bytes are kept for DOCUMENT_RETENTION_DAYS and purged after that (0: purged now). With `If-Match`, only if the document is still at that version (412 otherwise).',
        params: DocumentIdParams,
        headers: IfMatchHeaders,
        response: {
          200: DocumentDeletedEnvelope,
          ...documentErrors,
        },
      },
    },
    async (request) => {
      const id = request.params.documentId
      request.auditedIds = [id]
      return ok(
        'Document deleted',
        await deleteDocument(app.db, store, principalOf(request), id, retentionDays, request.expectedVersion),
      )
    },
  )
}

export default documentRoutes
