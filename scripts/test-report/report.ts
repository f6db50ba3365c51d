import { readFileSync } from 'node:fs'
import path from 'node:path'

/** One failed test (or a test file that failed before any of its tests ran) and why. */
export interface TestFailure {
  file: string
  name: string
  message: string
}

export interface TestReport {
  passed: number
  failed: number
  failures: TestFailure[]
}

interface VitestJson {
  numPassedTests: number
  numFailedTests: number
  numPendingTests: number
  numTodoTests: number
  testResults: {
    name: string
    status: string
    message?: string
    assertionResults: { fullName: string; status: string; failureMessages?: string[] }[]
  }[]
}

/**
 * Reads vitest's JSON report. Skipped and todo tests count as failed: a suite that leaves tests
 * behind has not shown they pass. A file that failed without running a test counts once.
 */
export function readReport(file: string, root = process.cwd()): TestReport {
  const json = JSON.parse(readFileSync(file, 'utf8')) as VitestJson
  const failures: TestFailure[] = []
  for (const result of json.testResults) {
    const relative = path.relative(root, result.name)
    if (result.status === 'failed' && result.assertionResults.length === 0) {
      failures.push({ file: relative, name: '(the file did not run)', message: result.message ?? '' })
    }
    for (const test of result.assertionResults) {
      if (test.status === 'passed') continue
      // The JSON report drops a failed hook's error and marks its tests skipped; the log has it.
      const message =
        test.status === 'failed'
          ? (test.failureMessages ?? []).join('\n')
          : `${test.status}: marked so, or a hook before it failed (the run's log shows the error)`
      failures.push({ file: relative, name: test.fullName, message })
    }
  }
  return { passed: json.numPassedTests, failed: failures.length, failures }
}

/** The first lines of a failure, enough to say why in a CI log's last screen. */
export function firstLines(message: string, count = 6): string {
  return message
    .split('\n')
    .filter((line) => line.trim() !== '')
    .slice(0, count)
    .map((line) => `    ${line.trimEnd()}`)
    .join('\n')
}
