import { randomUUID } from 'node:crypto'
import type { Multipart, MultipartFile } from '@fastify/multipart'
import type { ErrorObject } from 'ajv'
import type { Db } from '../../../db/database.js'
import type { DocumentRow } from '../../../db/tables/documents.js'
import type { Document, DocumentFields, DocumentListQuery } from '../../../schemas/documents.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { withChangeAudit } from '../../audit/change-audit.js'
import { AppError, invalidField, invalidFields, preconditionFailed } from '../../errors.js'
import { describeProblems, problemsText } from '../../http/validation-messages.js'
import { sortOrder, splitListQuery } from '../../lib/paging.js'
import { type RecordList, recordList } from '../../lib/row-list.js'
import type { ExpectedVersion } from '../../lib/versions.js'
import { checkEncounterOfPatient } from '../encounters/service.js'
import { requirePatient } from '../patients/service.js'
import { checkDeclaredType, checkSignature, SNIFF_BYTES } from './content-types.js'
import { toDocument } from './mapper.js'
import {
  DOCUMENT_SORT_COLUMNS,
  deleteAbandonedUpload,
  deletePendingDocument,
  documentRecords,
  findAvailableDocument,
  findSweepable,
  insertPendingDocument,
  markAvailable,
  markDeleted,
  markPurged,
  markSweptPurged,
  patientDocumentRows,
} from './queries.js'
import type { DocumentStore } from './store.js'

// What other areas use of the documents' own modules (FHIR's Binary and DocumentReference writes).
export { checkDeclaredType } from './content-types.js'
export type { DocumentStore } from './store.js'

/** A client's file name made safe to show: base name only, no control or quote characters. */
export function safeFileName(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? ''
  const printable = [...base].filter((char) => {
    const code = char.codePointAt(0) ?? 0
    return code >= 0x20 && code !== 0x7f && char !== '"'
  })
  return printable.join('').trim().slice(0, 200) || 'document'
}

/** Passes the bytes through once their first bytes have matched the declared type. */
async function* verified(source: AsyncIterable<Buffer>, contentType: string): AsyncGenerator<Buffer> {
  let head = Buffer.alloc(0)
  let checked = false
  for await (const chunk of source) {
    if (checked) {
      yield chunk
      continue
    }
    head = Buffer.concat([head, chunk])
    if (head.length >= SNIFF_BYTES) {
      checkSignature(contentType, head)
      checked = true
      yield head
    }
  }
  if (!checked) {
    checkSignature(contentType, head)
    yield head
  }
}

/** The parser's limits on the parts of an upload: metadata fields, then one file. */
export const UPLOAD_PARTS = { files: 1, fields: 10, fieldSize: 1024, parts: 11, headerPairs: 50 }

/** A validator of the route's (Fastify's compileValidationSchema), with Ajv's errors of its last check. */
interface FieldsValidator {
  (data: unknown): unknown
  errors?: readonly unknown[] | null
}

export interface UploadLimits {
  maxBytes: number
  /**
   * Checks the metadata against DocumentFields as a query string is checked: the fields are text,
   * converted to the schema's types (encounterId to an integer, from canonical digits only).
   */
  validateFields: FieldsValidator
}

// What describeProblems says of a missing member.
const REQUIRED = 'is required'

/**
 * The metadata, with every problem in words and in `error.fields`, as any other request body gets
 * them. A field reported missing may have been sent after the file, where it is not read.
 */
function parseFields(fields: Record<string, unknown>, validate: FieldsValidator): DocumentFields {
  if (validate(fields) === true) return fields as DocumentFields
  const found = describeProblems((validate.errors ?? []) as ErrorObject[])
  const problems = found.problems.map((problem) =>
    problem.message === REQUIRED ? { ...problem, message: `${REQUIRED} (send it before the file)` } : problem,
  )
  throw invalidFields(
    problems,
    problemsText({ ...found, problems }, 'fields'),
    found.missing ? 'VAL_002' : 'VAL_001',
  )
}

/**
 * Stores one uploaded file for a patient. The metadata row is written first (PENDING), the bytes
 * are streamed to the store while their hash and size are computed, then the row becomes
 * AVAILABLE. Any failure removes both; a crash in between leaves a PENDING row that housekeeping
 * clears.
 */
export async function uploadDocument(
  db: Db,
  store: DocumentStore,
  actor: Actor,
  patientId: number,
  parts: AsyncIterable<Multipart>,
  limits: UploadLimits,
): Promise<Document> {
  await requirePatient(db, actor, patientId)
  const fields: Record<string, string> = {}
  let stored: DocumentRow | undefined
  try {
    for await (const part of readParts(parts, limits.maxBytes)) {
      if (part.type === 'field') {
        if (stored) {
          throw invalidFields(
            [{ path: part.fieldname, message: 'came after the file: send the fields first' }],
            `The field ${part.fieldname} came after the file; send fields first`,
          )
        }
        fields[part.fieldname] = String(part.value)
        continue
      }
      if (part.fieldname !== 'file') {
        throw invalidFields(
          [{ path: part.fieldname, message: 'is not a known file part: name the file part file' }],
          `Unexpected file field ${part.fieldname}; name it file`,
        )
      }
      const metadata = parseFields(fields, limits.validateFields)
      if (metadata.encounterId) {
        await checkEncounterOfPatient(db, actor.organizationId, patientId, metadata.encounterId)
      }
      stored = await storeFile(db, store, actor, patientId, metadata, part, limits)
    }
  } catch (error) {
    if (stored) await discard(db, store, stored)
    throw error
  }
  if (!stored) throw invalidFields([{ path: 'file', message: REQUIRED }], undefined, 'VAL_002')
  return toDocument(stored)
}

const ONE_FILE = 'must be sent once: an upload holds exactly one file'
const FIELDS = `must have at most ${UPLOAD_PARTS.fields} fields (title, category, encounterId), then file`

/**
 * The parser's refusal of a part past one of the counts of UPLOAD_PARTS, said as what the upload
 * must be (422, naming the part): the parser itself says 413, as if the body were too large.
 */
const PART_LIMITS = new Map<string, () => AppError>([
  ['FST_FILES_LIMIT', () => invalidField('file', ONE_FILE)],
  [
    'FST_FIELDS_LIMIT',
    () =>
      invalidFields(
        [{ path: '', message: FIELDS }],
        `The upload has more than ${UPLOAD_PARTS.fields} fields; it takes title, category and encounterId, then file`,
      ),
  ],
  [
    'FST_PARTS_LIMIT',
    () =>
      invalidFields(
        [{ path: '', message: FIELDS }],
        `The upload has more than ${UPLOAD_PARTS.parts} parts; it takes title, category and encounterId, then file`,
      ),
  ],
])

const fileTooLarge = (maxBytes: number) =>
  new AppError('VAL_001', `The file is larger than the limit of ${maxBytes} bytes`, {
    status: 413,
    message: 'File too large',
  })

/**
 * A body the multipart parser cannot read (no boundary, cut short, a forbidden field name) is the
 * client's error: 400; a limit of the parser's is 422 or 413. Its errors carry no status of ours
 * otherwise and would surface as a 500, or as a JSON body over its size limit.
 */
function malformedUpload(error: unknown, maxBytes: number): unknown {
  if (error instanceof AppError) return error
  const code = String((error as { code?: unknown }).code)
  if (code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge(maxBytes)
  const limit = PART_LIMITS.get(code)
  if (limit) return limit()
  return new AppError('VAL_001', 'The multipart body is malformed', {
    status: 400,
    message: 'Invalid request',
  })
}

/**
 * Whether an error that ended the file's stream came from the parser (the body was cut short or
 * malformed) rather than from storage: @fastify/multipart's errors have FST_ codes, its parser's
 * name the multipart data.
 */
function isParserError(error: unknown): boolean {
  if (!(error instanceof Error) || error instanceof AppError) return false
  const code = (error as { code?: unknown }).code
  return (typeof code === 'string' && code.startsWith('FST_')) || /multipart|part header/i.test(error.message)
}

async function* readParts(parts: AsyncIterable<Multipart>, maxBytes: number): AsyncGenerator<Multipart> {
  const iterator = parts[Symbol.asyncIterator]()
  for (;;) {
    let next: IteratorResult<Multipart>
    try {
      next = await iterator.next()
    } catch (error) {
      throw malformedUpload(error, maxBytes)
    }
    if (next.done) return
    yield next.value
  }
}

/** A new document: its patient and metadata, and the type and name its bytes came with. */
export interface NewDocument {
  patientId: number
  fields: DocumentFields
  contentType: string
  fileName: string | undefined
}

/** Where documents' bytes are kept, and the rules every way of storing or deleting one follows. */
export interface DocumentStorage {
  store: DocumentStore
  /** MAX_UPLOAD_BYTES: a larger document is 413. */
  maxBytes: number
  /** DOCUMENT_RETENTION_DAYS: how long a deleted document's bytes are kept. */
  retentionDays: number
}

/** Bytes as they come (a stream), or all at once (a FHIR attachment's, decoded). */
type Bytes = AsyncIterable<Buffer> | Iterable<Buffer>

/** The bytes, refused (413) once more than `maxBytes` of them have come. */
async function* limited(source: Bytes, maxBytes: number): AsyncGenerator<Buffer> {
  let size = 0
  for await (const chunk of source) {
    size += chunk.length
    if (size > maxBytes) throw fileTooLarge(maxBytes)
    yield chunk
  }
}

/**
 * Writes the document's row (PENDING), streams its bytes to the store while their hash and size
 * are computed, then makes the row AVAILABLE with the audit record of its upload. Any failure
 * removes both; a crash in between leaves a PENDING row that housekeeping clears.
 */
async function writeDocument(
  db: Db,
  storage: Pick<DocumentStorage, 'store' | 'maxBytes'>,
  actor: Actor,
  document: NewDocument,
  source: Bytes,
): Promise<DocumentRow> {
  const { store, maxBytes } = storage
  checkDeclaredType(document.contentType)
  const storageKey = randomUUID()
  const { id } = await insertPendingDocument(db, {
    organization_id: actor.organizationId,
    patient_id: document.patientId,
    encounter_id: document.fields.encounterId ?? null,
    title: document.fields.title,
    category: document.fields.category,
    content_type: document.contentType,
    file_name: safeFileName(document.fileName),
    storage_key: storageKey,
    uploaded_by: actor.userId,
  })
  try {
    const { size, sha256 } = await store.write(
      storageKey,
      verified(limited(source, maxBytes), document.contentType),
    )
    // Available only with the audit record of its upload.
    return await withChangeAudit(db, (db) => markAvailable(db, actor.organizationId, id, size, sha256))
  } catch (error) {
    // If the store cannot remove the bytes now, the row stays PENDING and housekeeping removes both
    // later; the answer is the first error, not the clean-up's.
    await store.remove(storageKey).then(
      () => deletePendingDocument(db, actor.organizationId, id),
      () => undefined,
    )
    throw error
  }
}

/**
 * Stores a document whose bytes come whole from `source` (a FHIR attachment's data, a Binary's
 * body) as an upload stores its file: the same patient and encounter checks, content types, size
 * limit and audit record. Not to be called in a transaction: the bytes are stored outside the
 * database, and its rollback would leave them behind.
 */
export async function createDocument(
  db: Db,
  storage: DocumentStorage,
  actor: Actor,
  document: NewDocument,
  source: Bytes,
): Promise<DocumentRow> {
  await requirePatient(db, actor, document.patientId)
  const { encounterId } = document.fields
  if (encounterId) await checkEncounterOfPatient(db, actor.organizationId, document.patientId, encounterId)
  return writeDocument(db, storage, actor, document, source)
}

/** The file's bytes; the parser cuts a file at the size limit and marks it truncated. */
async function* wholeFile(part: MultipartFile, maxBytes: number): AsyncGenerator<Buffer> {
  yield* part.file
  if (part.file.truncated) throw fileTooLarge(maxBytes)
}

async function storeFile(
  db: Db,
  store: DocumentStore,
  actor: Actor,
  patientId: number,
  fields: DocumentFields,
  part: MultipartFile,
  limits: UploadLimits,
): Promise<DocumentRow> {
  const document = { patientId, fields, contentType: part.mimetype, fileName: part.filename }
  try {
    const storage = { store, maxBytes: limits.maxBytes }
    return await writeDocument(db, storage, actor, document, wholeFile(part, limits.maxBytes))
  } catch (error) {
    // The rest of the file must be read off the connection, or the request would hang.
    part.file.resume()
    // The parser reports a body cut short inside the file as an error of the file's stream.
    throw isParserError(error) ? malformedUpload(error, limits.maxBytes) : error
  }
}

async function discard(db: Db, store: DocumentStore, row: DocumentRow): Promise<void> {
  await store.remove(row.storage_key)
  await documentRecords.delete(db, row.organization_id, row.id)
}

/** A patient's documents a list query asks for (metadata); a sync page has tombstones of deleted ones. */
export async function listDocuments(
  db: Db,
  actor: Actor,
  patientId: number,
  query: DocumentListQuery,
): Promise<RecordList<Document>> {
  await requirePatient(db, actor, patientId)
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, DOCUMENT_SORT_COLUMNS, { field: 'createdAt', direction: 'desc' })
  const rows = patientDocumentRows(db, actor.organizationId, patientId, filters)
  return recordList(rows, paging, sort, (found) => found.map(toDocument))
}

/** The document, or the organization rule: another organization's is 403, a missing one 404. */
export async function findDocument(db: Db, actor: Actor, id: number): Promise<DocumentRow> {
  const row = await findAvailableDocument(db, actor.organizationId, id)
  return row ?? missingRecord('Document', id, await ownerOrganization(db, 'documents', id), actor)
}

/**
 * Removes the document from every listing. Its bytes are kept for the retention period
 * (DOCUMENT_RETENTION_DAYS) and purged by housekeeping after that; 0 purges them now.
 */
export async function deleteDocument(
  db: Db,
  store: DocumentStore,
  actor: Actor,
  id: number,
  retentionDays: number,
  expectedVersion: ExpectedVersion,
): Promise<{ id: number }> {
  await findDocument(db, actor, id)
  const deleted = await withChangeAudit(db, (db) =>
    markDeleted(db, actor.organizationId, id, actor.userId, expectedVersion),
  )
  if (!deleted) {
    // Deleted meanwhile (404), or still there at another version than If-Match named (412).
    const current = await findDocument(db, actor, id)
    throw preconditionFailed(current.version)
  }
  // In a transaction (a FHIR transaction Bundle's), the deletion may yet be rolled back: its bytes
  // are left to housekeeping, which purges only what a commit deleted.
  if (retentionDays === 0 && !db.isTransaction) {
    // The record is deleted either way: bytes the store cannot remove now are purged by housekeeping.
    await store.remove(deleted.storage_key).then(
      () => markPurged(db, actor.organizationId, id),
      () => undefined,
    )
  }
  return { id }
}

// An upload still PENDING after this long was cut off by a crash.
const ABANDONED_UPLOAD_MS = 60 * 60_000
const SWEEP_BATCH = 100

/** Clears interrupted uploads and purges the bytes of documents deleted longer ago than the retention. */
export async function sweepDocuments(
  db: Db,
  store: DocumentStore,
  retentionDays: number,
  now = Date.now(),
): Promise<number> {
  const rows = await findSweepable(
    db,
    new Date(now - ABANDONED_UPLOAD_MS),
    new Date(now - retentionDays * 86_400_000),
    SWEEP_BATCH,
  )
  for (const row of rows) {
    await store.remove(row.storage_key)
    if (row.status === 'PENDING') await deleteAbandonedUpload(db, row.id)
    else await markSweptPurged(db, row.id)
  }
  return rows.length
}
