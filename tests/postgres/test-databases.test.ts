import { randomUUID } from 'node:crypto'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { sweepDocuments } from '../../src/modules/documents/service.js'
import { localStore } from '../../src/modules/documents/store.js'
import { buildTestApp, openTestDatabase } from '../helpers/app.js'
import { createPatient, insertPendingDocument, newOrganization } from '../helpers/factories.js'

// Housekeeping works over every organization of its database. When test files shared one, a test
// that swept with its clock moved ahead deleted another file's upload still in flight (its row was
// PENDING), and that upload answered 500. Each file now takes a database of its own.
describe('test databases on PostgreSQL', () => {
  it('are a migrated copy for each caller, never shared', async () => {
    const [first, second] = [await openTestDatabase(), await openTestDatabase()]
    try {
      const name = async (handle: typeof first) =>
        (await sql<{ name: string }>`select current_database() as name`.execute(handle.db)).rows[0]?.name
      expect(await name(first)).not.toBe(await name(second))
      const migrations = await sql<{
        count: number
      }>`select count(*)::int as count from kysely_migration`.execute(second.db)
      expect(migrations.rows[0]?.count).toBeGreaterThan(0)
    } finally {
      await Promise.all([first.close(), second.close()])
    }
  })

  it('keep an upload in flight in one safe from a sweep with a moved clock in another', async () => {
    const app = await buildTestApp()
    const other = await openTestDatabase()
    const store = localStore(await mkdtemp(path.join(tmpdir(), 'ehr-documents-')))
    try {
      const nurse = await (await newOrganization(app)).user('NURSE')
      const id = await insertPendingDocument(
        app,
        nurse,
        await createPatient(app, nurse),
        `in-flight-${randomUUID()}`,
      )
      const inFlight = () =>
        app.db.selectFrom('documents').select('id').where('id', '=', id).executeTakeFirst()
      const twoHoursAhead = Date.now() + 2 * 3600_000

      await sweepDocuments(other.db, store, 30, twoHoursAhead)
      expect(await inFlight()).toEqual({ id })
      // The same sweep on the upload's own database is what removed it.
      await sweepDocuments(app.db, store, 30, twoHoursAhead)
      expect(await inFlight()).toBeUndefined()
    } finally {
      await other.close()
      await app.close()
    }
  })
})
