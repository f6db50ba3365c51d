import type { Insertable } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { precompiledQuery } from '../../db/precompiled-query.js'
import type { OrganizationsTable } from '../../db/tables/organizations.js'
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

  it('takes a row as one value per field, compiled once for each set of fields', async () => {
    const insertOrganization = precompiledQuery((db, row: Insertable<OrganizationsTable>) =>
      db.insertInto('organizations').values(row).returning(['name', 'group_path', 'created_at']),
    )
    const chosen = new Date('2001-02-03T04:05:06.000Z')
    const [plain] = await insertOrganization(handle.db, { name: 'Precompiled E', group_path: '/E' })
    const [dated] = await insertOrganization(handle.db, {
      name: 'Precompiled F',
      group_path: '/F',
      created_at: chosen,
    })
    // A field left undefined is left out, so the column takes its default as Kysely would give it.
    const [undated] = await insertOrganization(handle.db, {
      created_at: undefined,
      group_path: '/G',
      name: 'Precompiled G',
    })
    expect(plain).toMatchObject({ name: 'Precompiled E', group_path: '/E' })
    expect(dated).toEqual({ name: 'Precompiled F', group_path: '/F', created_at: chosen })
    expect(undated).toMatchObject({ name: 'Precompiled G', group_path: '/G' })
    for (const row of [plain, undated]) {
      expect(Date.now() - (row as { created_at: Date }).created_at.getTime()).toBeLessThan(60_000)
    }
    await handle.db
      .deleteFrom('organizations')
      .where('name', 'in', ['Precompiled E', 'Precompiled F', 'Precompiled G'])
      .execute()
  })
})
