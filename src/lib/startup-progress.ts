import { existsSync } from 'node:fs'
import path from 'node:path'
import type { FastifyBaseLogger } from 'fastify'

/** Where the embedded database keeps its files. */
export const embeddedDatabaseDir = (dataDir: string) => path.join(dataDir, 'pgdata')

/**
 * Logs a startup step and writes it out at once: a first start takes seconds, and a console that
 * shows nothing meanwhile looks like a hang.
 */
export function startupProgress(log: FastifyBaseLogger, stream?: { flush?(): void }) {
  return (step: string) => {
    log.info(step)
    stream?.flush?.()
  }
}

export function embeddedDatabaseStep(dataDir: string, fromTemplate: boolean): string {
  const directory = embeddedDatabaseDir(dataDir)
  if (existsSync(directory)) return `opening the embedded database in ${directory}`
  return fromTemplate
    ? `creating the embedded database in ${directory} from its prepared template (first start only)`
    : `creating the embedded database in ${directory} (first start only)`
}
