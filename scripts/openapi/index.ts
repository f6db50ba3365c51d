import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { openPglite } from '../../db/connect.js'
import { buildApp } from '../../src/app.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { OPENAPI_TYPES_FILE, writeOpenApiTypes } from '../openapi-types/write.js'

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: 'openapi.json' },
      types: { type: 'string', default: OPENAPI_TYPES_FILE },
    },
  })
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'silent',
    MIGRATE_ON_START: 'true',
    OUTBOX_WORKER: 'false',
    // Nothing is encrypted here; a throwaway key keeps the operator's key file untouched.
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  })
  // A throwaway in-memory database: building the app needs the schema, not the operator's data.
  const app = await buildApp(config, { database: await openPglite({}) })
  try {
    await app.ready()
    const document = app.swagger()
    const file = path.resolve(values.out)
    await writeFile(file, `${JSON.stringify(document, null, 2)}\n`)
    process.stdout.write(`wrote ${file}\n`)
    // The typed client's view of the same document (scripts/client).
    const typesFile = path.resolve(values.types)
    if (await writeOpenApiTypes(file, typesFile)) process.stdout.write(`wrote ${typesFile}\n`)
  } finally {
    await app.close()
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : (error as Error).stack}\n`)
  process.exitCode = 1
})
