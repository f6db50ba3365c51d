import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyRequest } from 'fastify'
import type { ListPaging, PageOf, PageQuery } from '../../schemas/common.js'
import { AppError } from '../errors.js'
import { splitListQuery } from '../lib/paging.js'
import type { SyncPosition, SyncRead, SyncResult } from '../lib/sync-paging.js'

const badCursor = (details: string) =>
  new AppError('VAL_001', details, { status: 400, message: 'Invalid request parameters' })

interface CursorPayload {
  /** Position: change time and id of the last item read. */
  t: string
  i: number
  /** The list and filters the cursor was issued for. */
  f: string
}

/**
 * Sync cursors: a position in a list, bound to the list and its filters and signed with the
 * service's key, so a client can neither forge one nor reuse it on other filters by mistake.
 */
export class SyncCursors {
  constructor(private readonly key: Buffer) {}

  /** The sync read a list request asks for (`updatedSince` or `cursor`), or undefined for an offset page. */
  readOf(request: FastifyRequest, paging: ListPaging): SyncRead | undefined {
    const { cursor, updatedSince, page, size, sort } = paging
    if (cursor === undefined && updatedSince === undefined) return undefined
    if (cursor !== undefined && updatedSince !== undefined)
      throw badCursor('Send either updatedSince (to start) or cursor (to read on), not both')
    if (page !== 0 || sort !== undefined)
      throw badCursor('Sync pages are ordered by (updatedAt, id): leave out page and sort')
    if (updatedSince !== undefined) return { after: { time: updatedSince, id: 0 }, size }
    return { after: this.open(cursor as string, bindingOf(request)), size }
  }

  /** The API page of a sync read, with the cursor to read on from. */
  pageOf<T>(request: FastifyRequest, paging: ListPaging, result: SyncResult<T>): PageOf<T> {
    return {
      content: result.items,
      ...(result.deleted.length > 0 ? { deleted: result.deleted } : {}),
      pageable: { pageNumber: 0, pageSize: paging.size },
      first: paging.cursor === undefined,
      last: !result.more,
      nextCursor: this.seal(result.next, bindingOf(request)),
    }
  }

  private seal(position: SyncPosition, binding: string): string {
    const body = Buffer.from(JSON.stringify({ t: position.time, i: position.id, f: binding })).toString(
      'base64url',
    )
    return `${body}.${this.sign(body)}`
  }

  private open(cursor: string, binding: string): SyncPosition {
    const [body = '', signature = ''] = cursor.split('.')
    const expected = Buffer.from(this.sign(body))
    const given = Buffer.from(signature)
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw badCursor('cursor is not one this service issued (pass nextCursor unchanged)')
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CursorPayload
    if (payload.f !== binding)
      throw badCursor('cursor was issued for another list or other filters; send the same filters as before')
    return { time: payload.t, id: payload.i }
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url')
  }
}

/** What a cursor is bound to: the route, its path parameters and the filters of the query. */
function bindingOf(request: FastifyRequest): string {
  const { filters } = splitListQuery(request.query as PageQuery & Record<string, unknown>)
  const bound = Object.keys(filters)
    .sort()
    .map((name) => [name, filters[name]])
  const subject = JSON.stringify([request.routeOptions.url, request.params, bound])
  return createHash('sha256').update(subject).digest('base64url').slice(0, 16)
}
