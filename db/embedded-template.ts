import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readdir, rename, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { openPglite } from './connect.js'
import { migrations } from './migrations/index.js'
import { migrateToLatest } from './migrator.js'

/**
 * A new embedded database starts as a copy of a prepared, migrated data directory: initdb (seconds
 * of WebAssembly) and the migrations then run once per installation (`npm ci`, the build), not on
 * every first start. A template is made by one PGlite for one list of migrations and named after
 * both, so that another version or a new migration is never served from an old template; the
 * service falls back to initdb until the template is prepared again.
 */

const TEMPLATE_NAME = /^pgdata-[0-9a-f]{16}$/

function pgliteNodeModules(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite')
  const marker = `${path.sep}node_modules${path.sep}`
  return entry.slice(0, entry.lastIndexOf(marker) + marker.length - 1)
}

/**
 * Where templates are kept: `node_modules/.cache/ehr-service/embedded-database` beside the PGlite
 * that reads them, so that the sources (`npm start`), the bundle and the Docker image find the same
 * place, and a fresh install starts with none.
 */
function templateCache(): string {
  return path.join(pgliteNodeModules(), '.cache', 'ehr-service', 'embedded-database')
}

/** The template's name: the PGlite version and the migrations it holds, hashed. */
export function templateName(): string {
  const pglite = path.join(pgliteNodeModules(), '@electric-sql', 'pglite', 'package.json')
  const { version } = JSON.parse(readFileSync(pglite, 'utf8')) as { version: string }
  const key = JSON.stringify({ pglite: version, migrations: Object.keys(migrations) })
  return `pgdata-${createHash('sha256').update(key).digest('hex').slice(0, 16)}`
}

/** The template for this PGlite and these migrations in `cache`, if one was prepared. */
export function findTemplate(cache = templateCache()): string | undefined {
  const directory = path.join(cache, templateName())
  return existsSync(directory) ? directory : undefined
}

/**
 * Makes the template unless it exists, and removes those of other versions or migration lists
 * (each as large as a new data directory). It is built under a name of its own and renamed into place when complete.
 */
export async function prepareTemplate(
  cache = templateCache(),
): Promise<{ directory: string; created: boolean }> {
  const name = templateName()
  const directory = path.join(cache, name)
  if (existsSync(directory)) return { directory, created: false }
  await mkdir(cache, { recursive: true })
  const building = `${directory}.building-${process.pid}`
  await rm(building, { recursive: true, force: true })
  const handle = await openPglite({ dataDir: building })
  try {
    await migrateToLatest(handle.db)
  } finally {
    await handle.close()
  }
  try {
    await rename(building, directory)
  } catch (error) {
    // Another process prepared the same template meanwhile.
    await rm(building, { recursive: true, force: true })
    if (!existsSync(directory)) throw error
  }
  for (const entry of await readdir(cache)) {
    if (entry !== name && TEMPLATE_NAME.test(entry)) {
      await rm(path.join(cache, entry), { recursive: true, force: true })
    }
  }
  return { directory, created: true }
}
