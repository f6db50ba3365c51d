import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { parseArgs } from 'node:util'
import { runCommand } from '../lib/run-command.js'

/**
 * A longer run of the property-based API test (tests/api/http/fuzz.test.ts) than CI's: `--runs`
 * requests per operation, from `--seed` (a failure prints the seed and counterexample that
 * reproduce it); `--only 'POST /api/patients '` narrows it to the operations whose
 * name contains that text. TEST_DATABASE_URL, when set, runs it on PostgreSQL.
 */
async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string', default: '200' },
      seed: { type: 'string', default: String(Date.now() % 2_147_483_647) },
      only: { type: 'string' },
    },
  })
  const { only, ...numbers } = values
  for (const [name, value] of Object.entries(numbers)) {
    if (!/^\d+$/.test(value)) {
      process.stderr.write(`--${name} must be a non-negative integer\n`)
      return 2
    }
  }
  process.stdout.write(`fuzzing with --runs ${values.runs} --seed ${values.seed}\n`)
  const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs')
  const filter = only === undefined ? [] : ['-t', only.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')]
  const result = spawnSync(process.execPath, [vitest, 'run', 'tests/api/http/fuzz.test.ts', ...filter], {
    stdio: 'inherit',
    env: { ...process.env, FUZZ_RUNS: values.runs, FUZZ_SEED: values.seed },
  })
  return result.status ?? 1
}

runCommand(main)
