import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Migrator, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPglite } from '../../db/connect.js'
import { copyDataDir } from '../../db/data-dir-copy.js'
import type { Db } from '../../db/database.js'
import { findTemplate, prepareTemplate, templateName } from '../../db/embedded-template.js'
import { migrations } from '../../db/migrations/index.js'
import { migrateToLatest } from '../../db/migrator.js'
import { embeddedDatabaseDir } from '../../db/pglite-start.js'
import { buildApp } from '../../src/app.js'
import { bootstrapAdmin } from '../../src/bootstrap.js'
import { loadConfig } from '../../src/config.js'
import { testEnvironment } from '../helpers/app.js'

const ADMIN_PASSWORD = 'first-start-password-1'
const OLD_TEMPLATE = 'pgdata-0000000000000000'

let directory: string
let cache: string
let prepared: { directory: string; created: boolean }

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'ehr-template-'))
  cache = path.join(directory, 'cache')
  await mkdir(path.join(cache, OLD_TEMPLATE), { recursive: true })
  prepared = await prepareTemplate(cache)
  // Only a copy of this template can hold this table: initdb and the migrations make none such.
  const template = await openPglite({ dataDir: prepared.directory })
  await sql`create table made_from_the_template (id int)`.execute(template.db)
  await template.close()
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})

const tableExists = async (db: Db, name: string) =>
  (await sql<{ present: boolean }>`select to_regclass(${name}) is not null as present`.execute(db)).rows[0]
    ?.present

/**
 * A first start as `server.ts` makes it, on a new `DATA_DIR`, with templates looked for in
 * `templateCache`: the app with its log lines, then the administrator.
 */
async function firstStart(templateCache: string) {
  const dataDir = await mkdtemp(path.join(directory, 'data-'))
  const lines: string[] = []
  const config = loadConfig(
    testEnvironment({ DATA_DIR: dataDir, MIGRATE_ON_START: 'true', LOG_LEVEL: 'info', ADMIN_PASSWORD }),
  )
  const app = await buildApp(config, {
    logStream: { write: (line) => lines.push((JSON.parse(line) as { msg: string }).msg) },
    templateCache,
  })
  const admin = await bootstrapAdmin(app.db, config)
  await app.ready()
  const login = await app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { username: admin?.email, password: ADMIN_PASSWORD },
  })
  return { app, dataDir, lines, loginStatus: login.statusCode }
}

const appliedMigrations = async (db: Db) =>
  (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db)).rows.map(
    (row) => row.name,
  )

describe('the embedded database template', () => {
  it('is prepared once for this PGlite and these migrations, replacing templates of others', async () => {
    expect(prepared).toEqual({ directory: path.join(cache, templateName()), created: true })
    expect(existsSync(path.join(cache, OLD_TEMPLATE))).toBe(false)
    expect(findTemplate(cache)).toBe(prepared.directory)
    expect(await prepareTemplate(cache)).toEqual({ directory: prepared.directory, created: false })
    expect(findTemplate(path.join(directory, 'no-cache'))).toBeUndefined()
  })

  it('gives a first start a copy of itself, migrated, with no initdb nor migrations to run', async () => {
    const start = await firstStart(cache)
    try {
      const pgdata = embeddedDatabaseDir(start.dataDir)
      expect(start.lines).toContain(
        `creating the embedded database in ${pgdata} from its prepared template (first start only)`,
      )
      expect(start.lines.filter((line) => /migrations/.test(line))).toEqual([])
      expect(await tableExists(start.app.db, 'made_from_the_template')).toBe(true)
      expect(await appliedMigrations(start.app.db)).toEqual(Object.keys(migrations).sort())
      expect(start.loginStatus).toBe(200)
    } finally {
      await start.app.close()
    }
  })

  it('falls back to initdb and every migration when there is no template', async () => {
    const start = await firstStart(path.join(directory, 'empty-cache'))
    try {
      const pgdata = embeddedDatabaseDir(start.dataDir)
      const steps = start.lines.filter((line) => /embedded database|migrations/.test(line))
      expect(steps).toEqual([
        `creating the embedded database in ${pgdata} (first start only)`,
        'applying database migrations',
        expect.stringMatching(
          new RegExp(`^applied ${Object.keys(migrations).length} migrations in \\d+ ms$`),
        ),
      ])
      expect(await tableExists(start.app.db, 'made_from_the_template')).toBe(false)
      expect(await appliedMigrations(start.app.db)).toEqual(Object.keys(migrations).sort())
      expect(start.loginStatus).toBe(200)
    } finally {
      await start.app.close()
    }
  })

  it('leaves the migrations a template lacks to the migrator, and replaces a copy cut short', async () => {
    const older = path.join(directory, 'older-template')
    await copyDataDir(prepared.directory, older)
    const template = await openPglite({ dataDir: older })
    const undone = await new Migrator({
      db: template.db,
      provider: { getMigrations: async () => migrations },
      allowUnorderedMigrations: true,
    }).migrateDown()
    await template.close()
    const last = Object.keys(migrations).sort().at(-1)
    expect(undone.results?.map((result) => [result.migrationName, result.status])).toEqual([
      [last, 'Success'],
    ])

    const dataDir = path.join(directory, 'from-older', 'pgdata')
    await mkdir(`${dataDir}.partial`, { recursive: true })
    await writeFile(path.join(`${dataDir}.partial`, 'PG_VERSION'), 'left by a copy cut short')
    const handle = await openPglite({ dataDir, template: older })
    try {
      expect(existsSync(`${dataDir}.partial`)).toBe(false)
      const applied = await migrateToLatest(handle.db)
      expect(applied.results?.map((result) => result.migrationName)).toEqual([last])
      expect(await tableExists(handle.db, 'made_from_the_template')).toBe(true)
    } finally {
      await handle.close()
    }
  })
})
