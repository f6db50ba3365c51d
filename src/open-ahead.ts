import { startPgliteAhead } from '../db/pglite-start.js'
import { loadConfig } from './config.js'

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
  const { url, embeddedDir, embeddedSharedBuffersMb } = config.database
  if (!url) startPgliteAhead(embeddedDir, embeddedSharedBuffersMb)
}
