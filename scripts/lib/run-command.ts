import { ConfigError } from '../../src/config.js'

/**
 * Runs a command-line script's `main`: its result becomes the exit code; a configuration error is
 * shown as its message alone, anything else with its stack.
 */
export function runCommand(main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code
    },
    (error: unknown) => {
      process.stderr.write(`${error instanceof ConfigError ? error.message : (error as Error).stack}\n`)
      process.exitCode = 1
    },
  )
}
