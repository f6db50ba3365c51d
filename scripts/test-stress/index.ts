import { spawn } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { runCommand } from '../lib/run-command.js'
import { firstLines, readReport, type TestFailure } from '../test-report/report.js'

const DATABASES = {
  pglite: { TEST_DATABASE_URL: '', TEST_REDIS_URL: '' },
  postgresql: {
    TEST_DATABASE_URL: process.env.CI_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    TEST_REDIS_URL: process.env.CI_REDIS_URL ?? 'redis://127.0.0.1:6379',
  },
} as const
type DatabaseName = keyof typeof DATABASES

// A pass of the suite takes a few minutes; the busy core is stopped after this long at the latest,
// so that a hunt left behind never keeps the machine loaded.
const MAX_BUSY_MINUTES_PER_PASS = 15

/**
 * The flake hunt: runs the whole suite `--runs` times on each database while another process keeps
 * one core busy, then prints every test that failed at least once, with how often and its first
 * failure. Exit code 1 when any test failed.
 */
async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string', default: '5' },
      databases: { type: 'string', default: 'pglite,postgresql' },
      'busy-cores': { type: 'string', default: '1' },
    },
  })
  const runs = Number(values.runs)
  const busyCores = Number(values['busy-cores'])
  const databases = values.databases.split(',') as DatabaseName[]
  if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(busyCores) || busyCores < 0) {
    process.stderr.write('--runs must be a positive integer, --busy-cores a non-negative one\n')
    return 2
  }
  const unknown = databases.filter((name) => !(name in DATABASES))
  if (unknown.length > 0) {
    process.stderr.write(`unknown database ${unknown.join(', ')}; use ${Object.keys(DATABASES).join(', ')}\n`)
    return 2
  }

  const reports = path.resolve('.test-results/stress')
  await rm(reports, { recursive: true, force: true })
  await mkdir(reports, { recursive: true })
  const started = Date.now()
  const busy = keepCoresBusy(busyCores, runs * databases.length * MAX_BUSY_MINUTES_PER_PASS * 60_000)
  const seen = new Map<string, { failure: TestFailure; passes: string[] }>()
  const loads: number[] = []
  let passed = 0
  try {
    for (let run = 1; run <= runs; run++) {
      for (const database of databases) {
        const label = `${database}-${run}`
        const report = path.join(reports, `${label}.json`)
        const passStarted = Date.now()
        await vitest(report, path.join(reports, `${label}.log`), DATABASES[database])
        loads.push(loadavg()[0] ?? 0)
        let result: ReturnType<typeof readReport>
        try {
          result = readReport(report)
        } catch {
          result = {
            passed: 0,
            failed: 1,
            failures: [{ file: '(suite)', name: 'no report', message: `see ${label}.log` }],
          }
        }
        passed += result.passed
        for (const failure of result.failures) {
          const key = `${failure.file} > ${failure.name}`
          const entry = seen.get(key) ?? { failure, passes: [] }
          entry.passes.push(label)
          seen.set(key, entry)
        }
        const seconds = Math.round((Date.now() - passStarted) / 1000)
        process.stdout.write(
          `${label}: ${result.passed} passed, ${result.failed} failed in ${seconds} s (load ${loadavg()[0]?.toFixed(1)})\n`,
        )
      }
    }
  } finally {
    busy.stop()
  }

  const minutes = ((Date.now() - started) / 60_000).toFixed(1)
  const meanLoad = (loads.reduce((sum, load) => sum + load, 0) / Math.max(loads.length, 1)).toFixed(1)
  process.stdout.write(
    `\n${runs} run(s) on ${databases.join(' and ')} with ${busyCores} core(s) kept busy: ` +
      `${minutes} min, mean 1-minute load ${meanLoad}, ${passed} test results passed\n`,
  )
  if (seen.size === 0) {
    process.stdout.write('No test failed.\n')
    return 0
  }
  process.stdout.write(`${seen.size} test(s) failed at least once:\n`)
  for (const [key, { failure, passes }] of seen) {
    process.stdout.write(`\nFAILED ${key}\n  in ${passes.join(', ')}\n${firstLines(failure.message, 12)}\n`)
  }
  process.stdout.write(`\nReports and logs: ${path.relative(process.cwd(), reports)}/\n`)
  return 1
}

function vitest(report: string, log: string, environment: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'npx',
      ['vitest', 'run', '--reporter=dot', '--reporter=json', `--outputFile.json=${report}`],
      {
        env: { ...process.env, ...environment, CI: 'true', NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    const out = createWriteStream(log)
    child.stdout.pipe(out)
    child.stderr.pipe(out)
    child.on('error', reject)
    child.on('close', () => resolve())
  })
}

/** Processes that spin on a core each until stopped or until the time limit, whichever is first. */
function keepCoresBusy(cores: number, limitMs: number) {
  const spinner = `const end = Date.now() + ${limitMs}; while (Date.now() < end) {}`
  const children = Array.from({ length: cores }, () =>
    spawn(process.execPath, ['-e', spinner], { stdio: 'ignore' }),
  )
  return {
    stop() {
      for (const child of children) child.kill('SIGKILL')
    },
  }
}

runCommand(main)
