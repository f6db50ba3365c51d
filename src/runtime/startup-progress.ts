import { existsSync } from 'node:fs'
import type { FastifyBaseLogger } from 'fastify'

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

/** `directory`: the embedded database's data directory. */
export function embeddedDatabaseStep(directory: string, fromTemplate: boolean): string {
  if (existsSync(directory)) return `opening the embedded database in ${directory}`
  return fromTemplate
    ? `creating the embedded database in ${directory} from its prepared template (first start only)`
    : `creating the embedded database in ${directory} (first start only)`
}
