import { describe, expect, it } from 'vitest'
import { sortOrder, splitListQuery, toPage } from '../../../src/lib/paging.js'

describe('toPage', () => {
  it.each([
    [0, 20, 0, { totalPages: 0, first: true, last: true }],
    [0, 20, 20, { totalPages: 1, first: true, last: true }],
    [0, 20, 21, { totalPages: 2, first: true, last: false }],
    [1, 20, 21, { totalPages: 2, first: false, last: true }],
    [5, 10, 21, { totalPages: 3, first: false, last: true }],
  ])('page %i of size %i over %i elements', (page, size, total, expected) => {
    expect(toPage([], total, { page, size })).toMatchObject({
      pageable: { pageNumber: page, pageSize: size },
      totalElements: total,
      ...expected,
    })
  })
})

describe('sortOrder', () => {
  const columns = { lastName: 'lower(last_name)', createdAt: 'created_at' }
  const fallback = { field: 'lastName', direction: 'asc' } as const

  it('maps the field to its column and reads the direction', () => {
    expect(sortOrder('createdAt,desc', columns, fallback)).toEqual({
      column: 'created_at',
      direction: 'desc',
    })
    expect(sortOrder('createdAt', columns, fallback)).toEqual({ column: 'created_at', direction: 'asc' })
  })

  it('falls back when no sort is given', () => {
    expect(sortOrder(undefined, columns, fallback)).toEqual({ column: 'lower(last_name)', direction: 'asc' })
  })

  it('never returns anything but a column from the map', () => {
    expect(sortOrder('id; drop table patients,desc', columns, fallback).column).toBe('lower(last_name)')
  })
})

describe('splitListQuery', () => {
  it('puts page, size, sort, cursor and updatedSince in the paging part and the rest in the filters', () => {
    const query = { page: 2, size: 10, sort: 'lastName,desc', status: 'ACTIVE', patientId: 7 }
    expect(splitListQuery(query)).toEqual({
      paging: { page: 2, size: 10, sort: 'lastName,desc' },
      filters: { status: 'ACTIVE', patientId: 7 },
    })
    expect(
      splitListQuery({ page: 0, size: 20, cursor: 'a.b', updatedSince: '2026-01-01T00:00:00Z' }),
    ).toEqual({
      paging: { page: 0, size: 20, cursor: 'a.b', updatedSince: '2026-01-01T00:00:00Z' },
      filters: {},
    })
  })
})
