import { describe, expect, it } from 'vitest'
import { openPglite } from '../../db/connect.js'
import { migrations } from '../../db/migrations/index.js'
import { migrateToLatest } from '../../db/migrator.js'

describe('migrateToLatest', () => {
  it('applies every migration to an empty database, then finds nothing left to do', async () => {
    const handle = await openPglite({})
    try {
      const first = await migrateToLatest(handle.db)
      expect(first.results?.map((result) => result.migrationName).sort()).toEqual(
        Object.keys(migrations).sort(),
      )
      expect(first.results?.every((result) => result.status === 'Success')).toBe(true)
      const again = await migrateToLatest(handle.db)
      expect(again.results).toEqual([])
    } finally {
      await handle.close()
    }
  })
})
