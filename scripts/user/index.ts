import { pathToFileURL } from 'node:url'
import { runCliCommand } from '../cli/run.js'
import { userMain } from './command.js'

export { type CommandContext, runUserCommand } from './command.js'

// Run as `npm run user`; imported (by tests), it only exports. The bundled CLI imports command.ts.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runCliCommand(userMain)
}
