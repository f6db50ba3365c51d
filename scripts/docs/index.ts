import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { referenceFiles } from './reference.js'

const readIfPresent = (file: string) => readFile(file, 'utf8').catch(() => undefined)

/**
 * `npm run docs`: writes the reference pages (configuration, roles, errors) and `.env.example`
 * from the code.
 * `npm run docs -- --check` writes nothing and exits 1 when a committed page differs.
 */
async function main(): Promise<number> {
  const { values } = parseArgs({ options: { check: { type: 'boolean', default: false } } })
  let stale = 0
  for (const { path: file, content } of referenceFiles()) {
    if ((await readIfPresent(file)) === content) {
      process.stdout.write(`up to date ${file}\n`)
      continue
    }
    if (values.check) {
      process.stdout.write(`stale ${file}\n`)
      stale += 1
      continue
    }
    await mkdir(path.dirname(file), { recursive: true })
    await writeFile(file, content)
    process.stdout.write(`wrote ${file}\n`)
  }
  if (stale > 0) process.stderr.write('Run `npm run docs` and commit the result.\n')
  return stale > 0 ? 1 : 0
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    process.stderr.write(`${(error as Error).stack}\n`)
    process.exitCode = 1
  },
)
