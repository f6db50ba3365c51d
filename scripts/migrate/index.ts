import { runCliCommand } from '../cli/run.js'
import { migrateMain } from './command.js'

runCliCommand(migrateMain)
