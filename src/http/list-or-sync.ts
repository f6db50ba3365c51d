import type { FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { Database } from '../../db/database.js'
import type { ListPaging, PageOf } from '../../schemas/common.js'
import type { Principal } from '../identity/principal.js'
import type { SyncRead, SyncResult } from '../lib/sync-paging.js'
import { ok } from './envelope.js'
import { principalOf } from './principal.js'

/** The two ways an area reads its list for a caller: an offset page, or the changes after a position. */
export interface ListReads<Q, T> {
  list: (db: Kysely<Database>, actor: Principal, query: Q) => Promise<PageOf<T>>
  sync: (db: Kysely<Database>, actor: Principal, query: Q, read: SyncRead) => Promise<SyncResult<T>>
}

/**
 * Answers a list request: a sync page when it sends `updatedSince` or `cursor`, an offset page
 * otherwise, read where `readDb` sends the caller. The ids listed go into the call's audit record
 * unless `auditIds` is false (the record then names the record of the path, if any).
 */
export async function listOrSync<Q extends ListPaging, T extends { id: number }>(
  request: FastifyRequest & { query: Q },
  message: string,
  reads: ListReads<Q, T>,
  { auditIds = true }: { auditIds?: boolean } = {},
) {
  const { query, server } = request
  const db = server.readDb(request)
  const actor = principalOf(request)
  const sync = server.syncCursors.readOf(request, query)
  const page = sync
    ? server.syncCursors.pageOf(request, query, await reads.sync(db, actor, query, sync))
    : await reads.list(db, actor, query)
  if (auditIds) request.auditedIds = page.content.map((record) => record.id)
  return ok(message, page)
}
