import { startPgliteAhead } from '../db/pglite-start.js'
import { loadConfig } from './config.js'
import { embeddedDatabaseDir } from './lib/startup-progress.js'

/**
 * On the embedded database, starts opening it before the rest of the service is read (db/pglite-start.ts).
 * A configuration that does not load is left for the start itself to report.
 */
export function openDatabaseAhead(env: Record<string, string | undefined>): void {
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig(env)
  } catch {
    return
  }
  if (!config.DATABASE_URL)
    startPgliteAhead(embeddedDatabaseDir(config.DATA_DIR), config.EMBEDDED_SHARED_BUFFERS_MB)
}
