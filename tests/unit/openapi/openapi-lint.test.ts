import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number }
  problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>
}

const cli = path.resolve('node_modules/@redocly/cli/bin/cli.js')

/** Redocly CLI's lint with this project's redocly.yaml; it exits non-zero on errors, so read its report either way. */
function lint(file: string): Promise<LintReport> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [cli, 'lint', file, '--config', path.resolve('redocly.yaml'), '--format=json', '--max-problems=1000'],
      {
        // No telemetry and no update check: nothing may leave the machine.
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 60_000,
      },
      (error, stdout) => {
        try {
          resolve(JSON.parse(stdout) as LintReport)
        } catch {
          reject(error ?? new Error(`no lint report: ${stdout.slice(0, 500)}`))
        }
      },
    )
  })
}

const summary = (report: LintReport) =>
  report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)

describe('the committed openapi.json under Redocly lint (recommended rules, redocly.yaml)', () => {
  it('has no errors and no warnings, and finds a missing summary in a spoiled copy', async () => {
    const document = JSON.parse(await readFile('openapi.json', 'utf8'))
    delete document.paths['/api/patients'].get.summary
    const dir = await mkdtemp(path.join(tmpdir(), 'openapi-lint-'))
    try {
      const spoiled = path.join(dir, 'openapi.json')
      await writeFile(spoiled, JSON.stringify(document))
      const [committed, broken] = await Promise.all([lint('openapi.json'), lint(spoiled)])

      expect(summary(committed)).toEqual([])
      expect(committed.totals).toMatchObject({ errors: 0, warnings: 0 })
      expect(summary(broken)).toContain(
        'error operation-summary at #/paths/~1api~1patients/get/summary: Operation object should contain `summary` field.',
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
