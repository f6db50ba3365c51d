import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { precompiledQuery } from '../../db/precompiled-query.js'
import { openTestDatabase } from '../helpers/app.js'

let handle: DatabaseHandle
const ids: number[] = []

beforeAll(async () => {
  handle = await openTestDatabase()
  for (const name of ['Precompiled A', 'Precompiled B', 'Precompiled C']) {
    const row = await handle.db
      .insertInto('organizations')
      .values({ name, group_path: `/${name}` })
      .returning('id')
      .executeTakeFirstOrThrow()
    ids.push(row.id)
  }
})
afterAll(async () => {
  await handle.close()
})

// Placeholders and fixed values interleave: the fixed pattern sits between the two arguments.
const organizationsBetween = precompiledQuery((db, low: number, high: number) =>
  db
    .selectFrom('organizations')
    .select(['id', 'name'])
    .where('id', '>=', low)
    .where('name', 'like', 'Precompiled %')
    .where('id', '<=', high)
    .orderBy('id'),
)

describe('precompiledQuery', () => {
  it('answers as the same query built afresh, for each set of arguments', async () => {
    const [a, b, c] = ids as [number, number, number]
    for (const [low, high] of [
      [a, c],
      [b, b],
      [c, a],
    ] as const) {
      const fresh = await handle.db
        .selectFrom('organizations')
        .select(['id', 'name'])
        .where('id', '>=', low)
        .where('name', 'like', 'Precompiled %')
        .where('id', '<=', high)
        .orderBy('id')
        .execute()
      expect(await organizationsBetween(handle.db, low, high)).toEqual(fresh)
    }
    expect((await organizationsBetween(handle.db, a, c)).map((row) => row.name)).toEqual([
      'Precompiled A',
      'Precompiled B',
      'Precompiled C',
    ])
  })

  it('runs inside a transaction, seeing its uncommitted rows', async () => {
    const seen = await handle.db.transaction().execute(async (trx) => {
      const row = await trx
        .insertInto('organizations')
        .values({ name: 'Precompiled D', group_path: '/Precompiled D' })
        .returning('id')
        .executeTakeFirstOrThrow()
      const inside = await organizationsBetween(trx, row.id, row.id)
      await trx.deleteFrom('organizations').where('id', '=', row.id).execute()
      return inside
    })
    expect(seen.map((row) => row.name)).toEqual(['Precompiled D'])
  })
})
