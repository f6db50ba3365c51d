import type { Migration } from 'kysely'
import * as initial from './0001_initial.js'
import * as identity from './0002_identity.js'
import * as scheduling from './0003_scheduling.js'

/** Every migration, in order. Listed rather than scanned so tsx and compiled JS behave alike. */
export const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0002_identity': identity,
  '0003_scheduling': scheduling,
}
