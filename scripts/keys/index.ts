import { runCliCommand } from '../cli/run.js'
import { keysMain } from './command.js'

runCliCommand(keysMain)
