import { runCliCommand } from '../cli/run.js'
import { seedMain } from './command.js'

runCliCommand(seedMain)
