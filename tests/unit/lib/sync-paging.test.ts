import { describe, expect, it } from 'vitest'
import type { Tombstone } from '../../../schemas/common.js'
import { type SyncPosition, type SyncRead, syncPage } from '../../../src/lib/sync-paging.js'

const T1 = '2026-03-01T10:00:00.000001Z'
const T2 = '2026-03-01T10:00:00.000002Z'
const T3 = '2026-03-01T10:00:00.000003Z'
const T4 = '2026-03-01T10:00:01.000000Z'

const row = (id: number, time: string) => ({ id, sync_time: time, name: `record ${id}` })
const tombstone = (id: number, time: string): { item: Tombstone; position: SyncPosition } => ({
  item: { id, deleted: true, deletedAt: time },
  position: { time, id },
})
const toItem = (r: ReturnType<typeof row>) => ({ id: r.id, name: r.name })
const read = (
  size: number,
  after: SyncPosition = { time: '2026-01-01T00:00:00.000000Z', id: 0 },
): SyncRead => ({
  after,
  size,
})

describe('syncPage', () => {
  it('merges rows and tombstones in (time, id) order, records in items and tombstones in deleted', () => {
    const page = syncPage([row(5, T1), row(2, T3)], toItem, read(10), [tombstone(9, T1), tombstone(1, T2)])
    expect(page.items).toEqual([
      { id: 5, name: 'record 5' },
      { id: 2, name: 'record 2' },
    ])
    expect(page.deleted).toEqual([
      { id: 9, deleted: true, deletedAt: T1 },
      { id: 1, deleted: true, deletedAt: T2 },
    ])
    expect(page.next).toEqual({ time: T3, id: 2 })
    expect(page.more).toBe(false)
  })

  it('orders by id within one instant, whichever stream an entry comes from', () => {
    const page = syncPage([row(3, T1), row(7, T1)], toItem, read(2), [tombstone(4, T1)])
    expect(page.items.map((item) => item.id)).toEqual([3])
    expect(page.deleted.map((item) => item.id)).toEqual([4])
    expect(page.next).toEqual({ time: T1, id: 4 })
  })

  it('cuts the merge at the page size and says more follows', () => {
    // Each stream was read with one row beyond the page, as syncRows and syncTombstones do.
    const rows = [row(1, T1), row(2, T2), row(3, T4), row(4, T4)]
    const tombstones = [tombstone(8, T2), tombstone(9, T3)]
    const page = syncPage(rows, toItem, read(3), tombstones)
    expect(page.items.map((item) => item.id)).toEqual([1, 2])
    expect(page.deleted.map((item) => item.id)).toEqual([8])
    expect(page.next).toEqual({ time: T2, id: 8 })
    expect(page.more).toBe(true)
  })

  it('is the last page when exactly the page size is left', () => {
    const page = syncPage([row(1, T1), row(2, T2)], toItem, read(3), [tombstone(3, T3)])
    expect(page.items).toHaveLength(2)
    expect(page.deleted).toHaveLength(1)
    expect(page.next).toEqual({ time: T3, id: 3 })
    expect(page.more).toBe(false)
  })

  it('keeps the position read from when nothing changed', () => {
    const after = { time: T4, id: 12 }
    expect(syncPage([], toItem, read(5, after), [])).toEqual({
      items: [],
      deleted: [],
      next: after,
      more: false,
    })
  })

  it('needs no tombstones for lists whose records are never removed', () => {
    const page = syncPage([row(1, T1), row(2, T2)], toItem, read(1))
    expect(page).toEqual({
      items: [{ id: 1, name: 'record 1' }],
      deleted: [],
      next: { time: T1, id: 1 },
      more: true,
    })
  })
})
