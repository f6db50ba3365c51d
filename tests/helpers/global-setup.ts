import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Kysely, sql } from 'kysely'
import type { TestProject } from 'vitest/node'
import { loadPglite, openPostgres } from '../../db/connect.js'
import type { Database } from '../../db/database.js'
import { migrateToLatest } from '../../db/migrator.js'
import { PgliteDialect } from '../../db/pglite-dialect.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /** PostgreSQL URL of this run's freshly created database, when TEST_DATABASE_URL is set. */
    testDatabaseUrl: string | undefined
    /** A migrated PGlite data directory dump that every test file starts from. */
    pgliteTemplate: string | undefined
  }
}

/**
 * Prepares one migrated database for the whole run: on PostgreSQL a new database (dropped at the
 * end), on PGlite a dumped data directory that each test file loads instead of running initdb.
 */
export default async function setup(project: TestProject) {
  const serverUrl = process.env.TEST_DATABASE_URL
  if (serverUrl) {
    const name = `ehr_test_${randomBytes(6).toString('hex')}`
    const admin = openPostgres({ url: serverUrl, poolMax: 1 })
    await sql`create database ${sql.id(name)}`.execute(admin.db)
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    const handle = openPostgres({ url: url.toString(), poolMax: 1 })
    await migrateToLatest(handle.db)
    await handle.close()
    project.provide('testDatabaseUrl', url.toString())
    project.provide('pgliteTemplate', undefined)
    return async () => {
      await sql`drop database if exists ${sql.id(name)} with (force)`.execute(admin.db)
      await admin.close()
    }
  }

  const directory = await mkdtemp(path.join(tmpdir(), 'ehr-test-'))
  const { PGlite, extensions } = await loadPglite()
  const pglite = await PGlite.create({ extensions })
  const db = new Kysely<Database>({ dialect: new PgliteDialect(pglite) })
  await migrateToLatest(db)
  const file = path.join(directory, 'template.tar.gz')
  await writeFile(file, Buffer.from(await (await pglite.dumpDataDir('gzip')).arrayBuffer()))
  await db.destroy()
  await pglite.close()
  project.provide('testDatabaseUrl', undefined)
  project.provide('pgliteTemplate', file)
  return async () => {
    await rm(directory, { recursive: true, force: true })
  }
}
