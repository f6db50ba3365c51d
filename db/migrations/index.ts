import type { Migration } from 'kysely'
import * as initial from './0001_initial.js'
import * as identity from './0002_identity.js'
import * as webhooks from './0004_webhooks.js'

/** Every migration, in order. Listed rather than scanned so tsx and compiled JS behave alike. */
export const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0002_identity': identity,
  '0004_webhooks': webhooks,
}
