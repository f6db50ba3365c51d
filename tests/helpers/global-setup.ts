import { randomBytes } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Kysely, sql } from 'kysely'
import type { TestProject } from 'vitest/node'
import type { Database } from '../../db/database.js'
import { migrateToLatest } from '../../db/migrator.js'
import { PgliteDialect } from '../../db/pglite-dialect.js'
import { PgliteThread } from '../../db/pglite-thread-client.js'
import { openPostgres } from '../../db/postgres.js'

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * When TEST_DATABASE_URL is set: the run's migrated template database on that server, and the
     * URL of the server's own database to create copies of it from (no session may use the template).
     */
    postgresTemplate: { name: string; adminUrl: string } | undefined
    /** A migrated PGlite data directory dump that every test file starts from. */
    pgliteTemplate: string | undefined
  }
}

/**
 * Prepares one migrated database for the whole run, from which every test file takes a copy of its
 * own: on PostgreSQL a template database (each copy is a `CREATE DATABASE … TEMPLATE`, and all are
 * dropped at the end), on PGlite a dumped data directory that each test file loads instead of
 * running initdb. Files never share a database: housekeeping and delivery work over every
 * organization in a database, so a file exercising them would reach into another file's records.
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
    // A stray session on the template would make every copy fail; refusing connections says where.
    await sql`alter database ${sql.id(name)} with allow_connections false`.execute(admin.db)
    project.provide('postgresTemplate', { name, adminUrl: serverUrl })
    project.provide('pgliteTemplate', undefined)
    return async () => {
      const { rows } = await sql<{ datname: string }>`
        select datname from pg_database where datname like ${`${name}_%`}`.execute(admin.db)
      for (const { datname } of [...rows, { datname: name }]) {
        await sql`drop database if exists ${sql.id(datname)} with (force)`.execute(admin.db)
      }
      await admin.close()
    }
  }

  const directory = await mkdtemp(path.join(tmpdir(), 'ehr-test-'))
  const pglite = new PgliteThread()
  const db = new Kysely<Database>({ dialect: new PgliteDialect(pglite) })
  await migrateToLatest(db)
  const file = path.join(directory, 'template.tar.gz')
  await writeFile(file, Buffer.from(await pglite.dump()))
  await db.destroy()
  await pglite.close()
  project.provide('postgresTemplate', undefined)
  project.provide('pgliteTemplate', file)
  return async () => {
    await rm(directory, { recursive: true, force: true })
  }
}
