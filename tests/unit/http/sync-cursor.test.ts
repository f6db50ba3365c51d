import type { FastifyRequest } from 'fastify'
import { describe, expect, it } from 'vitest'
import type { ListPaging } from '../../../schemas/common.js'
import { AppError } from '../../../src/errors.js'
import { SyncCursors } from '../../../src/http/sync-cursor.js'
import { forgedCursor } from '../../helpers/sync-cursors.js'

const cursors = new SyncCursors(Buffer.alloc(32, 1))
const URL = '/api/patients/:patientId/documents'
const POSITION = { time: '2026-03-01T10:00:00.123456Z', id: 42 }

/** What the cursors read of a request: its query, path parameters and route. */
function fakeRequest(
  query: Record<string, unknown>,
  params: Record<string, unknown> = { patientId: 7 },
  url = URL,
) {
  return { query, params, routeOptions: { url } } as unknown as FastifyRequest
}

const paging = (query: Partial<ListPaging> & Record<string, unknown> = {}) =>
  ({ page: 0, size: 20, ...query }) as ListPaging & Record<string, unknown>

/** A cursor sealed at POSITION for a request with `filters`, as a sync page hands it out. */
function issued(
  filters: Record<string, unknown> = {},
  params?: Record<string, unknown>,
  url?: string,
): string {
  const query = paging({ updatedSince: '2026-01-01T00:00:00Z', ...filters })
  const page = cursors.pageOf(fakeRequest(query, params, url), query, {
    items: [],
    deleted: [],
    next: POSITION,
    more: true,
  })
  return page.nextCursor as string
}

/** The 400 a request is refused with, or a failure if it is not refused. */
function refusal(read: () => unknown): AppError {
  try {
    read()
  } catch (error) {
    expect(error).toBeInstanceOf(AppError)
    return error as AppError
  }
  throw new Error('the request was not refused')
}

const readOn = (
  cursor: string,
  filters: Record<string, unknown> = {},
  params?: Record<string, unknown>,
  url?: string,
) => {
  const query = paging({ cursor, ...filters })
  return cursors.readOf(fakeRequest(query, params, url), query)
}

describe('SyncCursors', () => {
  it('reads an offset page when neither updatedSince nor cursor is sent', () => {
    const query = paging({ category: 'CONSENT', sort: 'title,asc', page: 2 })
    expect(cursors.readOf(fakeRequest(query), query)).toBeUndefined()
  })

  it('starts at updatedSince, before every record of that instant', () => {
    const query = paging({ updatedSince: '2026-03-01T10:00:00Z', size: 5 })
    expect(cursors.readOf(fakeRequest(query), query)).toEqual({
      after: { time: '2026-03-01T10:00:00Z', id: 0 },
      size: 5,
    })
  })

  it('opens a cursor it sealed, at the position sealed, with the filters it was issued for', () => {
    const cursor = issued({ category: 'CONSENT' })
    expect(readOn(cursor, { category: 'CONSENT', size: 7 })).toEqual({ after: POSITION, size: 7 })
  })

  it('marks the first page and the last one', () => {
    const start = paging({ updatedSince: '2026-01-01T00:00:00Z' })
    const first = cursors.pageOf(fakeRequest(start), start, {
      items: [],
      next: POSITION,
      deleted: [],
      more: true,
    })
    expect(first).toMatchObject({ first: true, last: false, pageable: { pageNumber: 0, pageSize: 20 } })
    const on = paging({ cursor: first.nextCursor })
    const last = cursors.pageOf(fakeRequest(on), on, { items: [], next: POSITION, deleted: [], more: false })
    expect(last).toMatchObject({ first: false, last: true })
    expect(last.nextCursor).toEqual(expect.any(String))
    expect(last).not.toHaveProperty('totalElements')
  })

  it('returns 400 for a cursor whose body was changed', () => {
    const error = refusal(() => readOn(forgedCursor(issued())))
    expect(error.status).toBe(400)
    expect(error.code).toBe('VAL_001')
    expect(error.details).toMatch(/not one this service issued/)
  })

  it('returns 400 for a cursor whose signature was changed', () => {
    const cursor = issued()
    const last = cursor.at(-1) === 'A' ? 'B' : 'A'
    expect(refusal(() => readOn(`${cursor.slice(0, -1)}${last}`)).status).toBe(400)
    expect(refusal(() => readOn(cursor.split('.')[0] as string)).status).toBe(400)
    expect(refusal(() => readOn('not-a-cursor')).status).toBe(400)
  })

  it('returns 400 for a cursor another key sealed', () => {
    const query = paging({ updatedSince: '2026-01-01T00:00:00Z' })
    const other = new SyncCursors(Buffer.alloc(32, 2))
    const page = other.pageOf(fakeRequest(query), query, {
      items: [],
      next: POSITION,
      deleted: [],
      more: true,
    })
    expect(refusal(() => readOn(page.nextCursor as string)).status).toBe(400)
  })

  it('returns 400 for a cursor issued for other filters, another record or another list', () => {
    const cursor = issued({ category: 'CONSENT' })
    for (const read of [
      () => readOn(cursor),
      () => readOn(cursor, { category: 'IMAGING' }),
      () => readOn(cursor, { category: 'CONSENT', title: 'x' }),
      () => readOn(cursor, { category: 'CONSENT' }, { patientId: 8 }),
      () => readOn(cursor, { category: 'CONSENT' }, { patientId: 7 }, '/api/audit-events'),
    ]) {
      const error = refusal(read)
      expect(error.status).toBe(400)
      expect(error.details).toMatch(/another list or other filters/)
    }
  })

  it('returns 400 for cursor with updatedSince', () => {
    const error = refusal(() => readOn(issued(), { updatedSince: '2026-01-01T00:00:00Z' }))
    expect(error.status).toBe(400)
    expect(error.details).toMatch(/not both/)
  })

  it('returns 400 for a sync read with sort or a page number', () => {
    for (const extra of [{ sort: 'createdAt,desc' }, { page: 1 }]) {
      expect(refusal(() => readOn(issued(), extra)).status).toBe(400)
      const query = paging({ updatedSince: '2026-01-01T00:00:00Z', ...extra })
      const error = refusal(() => cursors.readOf(fakeRequest(query), query))
      expect(error.status).toBe(400)
      expect(error.details).toMatch(/leave out page and sort/)
    }
  })
})
