import { firstLines, readReport } from './report.js'

/**
 * Prints each failing test of a vitest JSON report with the first lines of its failure, then one
 * line "<passed> <failed>" for the caller to add up. Exit code 2 when the report cannot be read.
 */
function main(file: string | undefined): number {
  if (!file) {
    process.stderr.write('usage: test-report <vitest-json-report>\n')
    return 2
  }
  let report: ReturnType<typeof readReport>
  try {
    report = readReport(file)
  } catch (error) {
    process.stderr.write(`cannot read ${file}: ${(error as Error).message}\n`)
    return 2
  }
  for (const failure of report.failures) {
    process.stdout.write(`FAILED ${failure.file} > ${failure.name}\n${firstLines(failure.message)}\n`)
  }
  process.stdout.write(`${report.passed} ${report.failed}\n`)
  return 0
}

process.exitCode = main(process.argv[2])
