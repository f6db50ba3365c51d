import path from 'node:path'
import { OPENAPI_TYPES_FILE, writeOpenApiTypes } from './write.js'

/**
 * Generates the typed client's types (scripts/client/openapi.d.ts) from the committed openapi.json
 * when they are missing or stale; says nothing when they are up to date. npm run typecheck and npm
 * run build run it first, so a fresh clone compiles after npm ci.
 */
writeOpenApiTypes().then(
  (written) => {
    if (written) process.stdout.write(`wrote ${path.relative(process.cwd(), OPENAPI_TYPES_FILE)}\n`)
  },
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack}\n`)
    process.exitCode = 1
  },
)
