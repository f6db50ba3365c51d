import { randomUUID } from 'node:crypto'
import type { Multipart, MultipartFile } from '@fastify/multipart'
import { Value } from '@sinclair/typebox/value'
import type { Kysely } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { DocumentRow } from '../../../db/tables/documents.js'
import type { PageOf } from '../../../schemas/common.js'
import { type Document, DocumentFields, type DocumentListQuery } from '../../../schemas/documents.js'
import { type Actor, missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { AppError, preconditionFailed } from '../../errors.js'
import { sortOrder, toPage } from '../../lib/paging.js'
import { type SyncRead, type SyncResult, syncPage } from '../../lib/sync-paging.js'
import type { ExpectedVersion } from '../../lib/versions.js'
import { checkEncounterOfPatient } from '../encounters/service.js'
import { requirePatient } from '../patients/service.js'
import { checkDeclaredType, checkSignature, SNIFF_BYTES } from './content-types.js'
import { toDocument } from './mapper.js'
import {
  DOCUMENT_SORT_COLUMNS,
  deleteAbandonedUpload,
  deletePendingDocument,
  deleteUploadedDocument,
  findAvailableDocument,
  findSweepable,
  insertPendingDocument,
  listPatientDocuments,
  markAvailable,
  markDeleted,
  markPurged,
  markSweptPurged,
  syncPatientDocuments,
} from './queries.js'
import type { DocumentStore } from './store.js'

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

function parseFields(fields: Record<string, string>): DocumentFields {
  if (!Value.Check(DocumentFields, fields)) {
    const error = [...Value.Errors(DocumentFields, fields)][0]
    const field = error?.path.slice(1) || 'fields'
    if (error && error.value === undefined)
      throw new AppError('VAL_002', `${field} is required (send it before the file)`)
    throw new AppError('VAL_001', `${field}: ${error?.message ?? 'invalid'}`)
  }
  return fields
}

export interface UploadLimits {
  maxBytes: number
}

/**
 * Stores one uploaded file for a patient. The metadata row is written first (PENDING), the bytes
 * are streamed to the store while their hash and size are computed, then the row becomes
 * AVAILABLE. Any failure removes both; a crash in between leaves a PENDING row that housekeeping
 * clears.
 */
export async function uploadDocument(
  db: Kysely<Database>,
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
    for await (const part of readParts(parts)) {
      if (part.type === 'field') {
        if (stored)
          throw new AppError('VAL_001', `The field ${part.fieldname} came after the file; send fields first`)
        fields[part.fieldname] = String(part.value)
        continue
      }
      if (part.fieldname !== 'file')
        throw new AppError('VAL_001', `Unexpected file field ${part.fieldname}; name it file`)
      const metadata = parseFields(fields)
      if (metadata.encounterId) {
        await checkEncounterOfPatient(db, actor.organizationId, patientId, Number(metadata.encounterId))
      }
      stored = await storeFile(db, store, actor, patientId, metadata, part, limits)
    }
  } catch (error) {
    if (stored) await discard(db, store, stored)
    throw error
  }
  if (!stored) throw new AppError('VAL_002', 'file is required')
  return toDocument(stored)
}

/**
 * A body the multipart parser cannot read (no boundary, cut short, a forbidden field name) is the
 * client's error: 400, or 413 for the parser's limits. Its errors carry no status of ours otherwise
 * and would surface as a 500.
 */
function malformedUpload(error: unknown): unknown {
  if (error instanceof AppError) return error
  const status = (error as { statusCode?: unknown }).statusCode
  if (status === 413) return error
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

async function* readParts(parts: AsyncIterable<Multipart>): AsyncGenerator<Multipart> {
  const iterator = parts[Symbol.asyncIterator]()
  for (;;) {
    let next: IteratorResult<Multipart>
    try {
      next = await iterator.next()
    } catch (error) {
      throw malformedUpload(error)
    }
    if (next.done) return
    yield next.value
  }
}

async function storeFile(
  db: Kysely<Database>,
  store: DocumentStore,
  actor: Actor,
  patientId: number,
  fields: DocumentFields,
  part: MultipartFile,
  limits: UploadLimits,
): Promise<DocumentRow> {
  checkDeclaredType(part.mimetype)
  const storageKey = randomUUID()
  const { id } = await insertPendingDocument(db, {
    organization_id: actor.organizationId,
    patient_id: patientId,
    encounter_id: fields.encounterId ? Number(fields.encounterId) : null,
    title: fields.title,
    category: fields.category,
    content_type: part.mimetype,
    file_name: safeFileName(part.filename),
    storage_key: storageKey,
    uploaded_by: actor.userId,
  })
  try {
    const { size, sha256 } = await store.write(storageKey, verified(part.file, part.mimetype))
    if (part.file.truncated) {
      throw new AppError('VAL_001', `The file is larger than the limit of ${limits.maxBytes} bytes`, {
        status: 413,
        message: 'File too large',
      })
    }
    return await markAvailable(db, actor.organizationId, id, size, sha256)
  } catch (error) {
    // The rest of the file must be read off the connection, or the request would hang.
    part.file.resume()
    // If the store cannot remove the bytes now, the row stays PENDING and housekeeping removes both
    // later; the answer is the first error, not the clean-up's.
    await store.remove(storageKey).then(
      () => deletePendingDocument(db, actor.organizationId, id),
      () => undefined,
    )
    // The parser reports a body cut short inside the file as an error of the file's stream.
    throw isParserError(error) ? malformedUpload(error) : error
  }
}

async function discard(db: Kysely<Database>, store: DocumentStore, row: DocumentRow): Promise<void> {
  await store.remove(row.storage_key)
  await deleteUploadedDocument(db, row.organization_id, row.id)
}

/** The list's filters: the query without its paging and sync parameters. */
function filtersOf(query: DocumentListQuery) {
  const { page: _page, size: _size, sort: _sort, cursor: _cursor, updatedSince: _since, ...filters } = query
  return filters
}

export async function listDocuments(
  db: Kysely<Database>,
  actor: Actor,
  patientId: number,
  query: DocumentListQuery,
): Promise<PageOf<Document>> {
  await requirePatient(db, actor, patientId)
  const paging = { page: query.page, size: query.size }
  const sort = sortOrder(query.sort, DOCUMENT_SORT_COLUMNS, { field: 'createdAt', direction: 'desc' })
  const { rows, total } = await listPatientDocuments(
    db,
    actor.organizationId,
    patientId,
    filtersOf(query),
    sort,
    paging,
  )
  return toPage(rows.map(toDocument), total, paging)
}

/** A sync page of a patient's documents: stored ones in (updatedAt, id) order, deleted ones as tombstones. */
export async function syncDocuments(
  db: Kysely<Database>,
  actor: Actor,
  patientId: number,
  query: DocumentListQuery,
  read: SyncRead,
): Promise<SyncResult<Document>> {
  await requirePatient(db, actor, patientId)
  const { rows, tombstones } = await syncPatientDocuments(
    db,
    actor.organizationId,
    patientId,
    filtersOf(query),
    read,
  )
  return syncPage(rows, toDocument, read, tombstones)
}

/** The document, or the organization rule: another organization's is 403, a missing one 404. */
export async function findDocument(db: Kysely<Database>, actor: Actor, id: number): Promise<DocumentRow> {
  const row = await findAvailableDocument(db, actor.organizationId, id)
  return row ?? missingRecord('Document', id, await ownerOrganization(db, 'documents', id), actor)
}

/**
 * Removes the document from every listing. Its bytes are kept for the retention period
 * (DOCUMENT_RETENTION_DAYS) and purged by housekeeping after that; 0 purges them now.
 */
export async function deleteDocument(
  db: Kysely<Database>,
  store: DocumentStore,
  actor: Actor,
  id: number,
  retentionDays: number,
  expectedVersion: ExpectedVersion,
): Promise<{ id: number }> {
  await findDocument(db, actor, id)
  const deleted = await markDeleted(db, actor.organizationId, id, actor.userId, expectedVersion)
  if (!deleted) {
    // Deleted meanwhile (404), or still there at another version than If-Match named (412).
    const current = await findDocument(db, actor, id)
    throw preconditionFailed(current.version)
  }
  if (retentionDays === 0) {
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
  db: Kysely<Database>,
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
