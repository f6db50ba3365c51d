import { describe, expect, it } from 'vitest'
import { type RowList, recordList, withLookup } from '../../../src/lib/row-list.js'

const T1 = '2026-03-01T10:00:00.000001Z'
const T2 = '2026-03-01T10:00:00.000002Z'
const T3 = '2026-03-01T10:00:00.000003Z'

type Row = { id: number; name: string }
const row = (id: number, time = T1) => ({ id, name: `record ${id}`, sync_time: time })

/** A list of rows held in memory, recording what it was asked for. */
function rowsOf(pageRows: Row[], total: number, changed: ReturnType<typeof row>[]) {
  const asked: unknown[] = []
  const rows: RowList<Row> = {
    page: async (sort, paging) => {
      asked.push({ sort, paging })
      return { rows: pageRows, total }
    },
    changes: async () => ({
      rows: changed,
      tombstones: [{ item: { id: 9, deleted: true, deletedAt: T2 }, position: { time: T2, id: 9 } }],
    }),
  }
  return { rows, asked }
}

const sort = { column: 'created_at', direction: 'desc' } as const
const read = (size: number) => ({ after: { time: '2026-01-01T00:00:00.000000Z', id: 0 }, size })

describe('recordList', () => {
  it('reads an offset page in the given order and maps its rows to records', async () => {
    const { rows, asked } = rowsOf([row(1), row(2)], 7, [])
    const page = await recordList(rows, { page: 1, size: 2 }, sort, (found) =>
      found.map((r) => r.name),
    ).page()
    expect(asked).toEqual([{ sort, paging: { page: 1, size: 2 } }])
    expect(page).toMatchObject({
      content: ['record 1', 'record 2'],
      pageable: { pageNumber: 1, pageSize: 2 },
      totalElements: 7,
      totalPages: 4,
    })
  })

  it('maps only the rows that make the sync page, with the tombstones in deleted', async () => {
    const mapped: number[][] = []
    const toRecords = (found: Row[]) => {
      mapped.push(found.map((r) => r.id))
      return found.map((r) => r.name)
    }
    const { rows } = rowsOf([], 0, [row(1, T1), row(2, T3), row(3, T3)])
    const page = await recordList(rows, { page: 0, size: 2 }, sort, toRecords).changes(read(2))
    expect(mapped).toEqual([[1]])
    expect(page).toEqual({
      items: ['record 1'],
      deleted: [{ id: 9, deleted: true, deletedAt: T2 }],
      next: { time: T2, id: 9 },
      more: true,
    })
  })
})

describe('withLookup', () => {
  it('looks up what the records carry once, by the ids of all the rows', async () => {
    const lookups: number[][] = []
    const toRecords = withLookup(
      async (ids: number[]) => {
        lookups.push(ids)
        return new Map(ids.map((id) => [id, id * 10]))
      },
      (r: Row, found: Map<number, number>) => ({ id: r.id, extra: found.get(r.id) }),
    )
    expect(await toRecords([row(1), row(2)])).toEqual([
      { id: 1, extra: 10 },
      { id: 2, extra: 20 },
    ])
    expect(lookups).toEqual([[1, 2]])
  })
})
