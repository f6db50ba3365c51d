import { type RawBuilder, sql } from 'kysely'

/** The work that reads or writes tenant tables across organizations by design (db/sharding-plan.ts). */
export type CrossOrganizationWork =
  | 'outbox worker'
  | 'bulk export worker'
  | 'housekeeping'
  | 'audit batches'
  | 'owner probe'
  | 'operations metrics'
  | 'change feed waiter'

/**
 * Marks a statement that works across organizations by design. The mark is a comment in the SQL, so
 * that a statement without an organization filter can be told from one that forgot it.
 */
export const acrossOrganizations = (work: CrossOrganizationWork): RawBuilder<unknown> =>
  sql.raw(`/* all organizations: ${work} */`)
