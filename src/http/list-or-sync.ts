import type { FastifyRequest } from 'fastify'
import type { Db } from '../../db/database.js'
import type { ListPaging, PageOf, PageQuery } from '../../schemas/common.js'
import type { Principal } from '../identity/principal.js'
import type { RecordList } from '../lib/row-list.js'
import { ok } from './envelope.js'
import { principalOf } from './request-principal.js'

/** How an area reads its list for the caller, from the list query. */
type ListRead<Q, R> = (db: Db, actor: Principal, query: Q) => R | Promise<R>

/** Whether the ids listed go into the call's audit record (else it names the record of the path, if any). */
interface ListOptions {
  auditIds?: boolean
}

/**
 * Answers a list request: a sync page when it sends `updatedSince` or `cursor`, an offset page
 * otherwise, read where `readDb` sends the caller.
 */
export async function listOrSync<Q extends ListPaging, T extends { id: number }>(
  request: FastifyRequest & { query: Q },
  message: string,
  read: ListRead<Q, RecordList<T>>,
  options: ListOptions = {},
) {
  const { query, server } = request
  const sync = server.syncCursors.readOf(request, query)
  const list = await read(server.readDb(request), principalOf(request), query)
  const page = sync ? server.syncCursors.pageOf(request, query, await list.changes(sync)) : await list.page()
  return answer(request, message, page, options)
}

/** Answers a request for a list that has offset pages only (its query takes no sync parameters). */
export async function listPage<Q extends PageQuery, T extends { id: number }>(
  request: FastifyRequest & { query: Q },
  message: string,
  read: ListRead<Q, PageOf<T>>,
) {
  const page = await read(request.server.readDb(request), principalOf(request), request.query)
  return answer(request, message, page)
}

function answer<T extends { id: number }>(
  request: FastifyRequest,
  message: string,
  page: PageOf<T>,
  { auditIds = true }: ListOptions = {},
) {
  if (auditIds) request.auditedIds = page.content.map((record) => record.id)
  return ok(message, page)
}
