import { readFileSync } from 'node:fs'

// docs/scaling.md plans sharding by organization with Citus; tests keep the plan true.
const plan = readFileSync(new URL('../../docs/scaling.md', import.meta.url), 'utf8')

/** The plan's section of docs/scaling.md. */
export const SHARDING_PLAN = plan.slice(plan.indexOf('## Sharding by organization with Citus'))

/** The first cells of the rows of the plan's table. */
export const DISTRIBUTED = 'distributed by `organization_id`'
export const REFERENCE = 'reference tables (copied to every node)'
export const LOCAL = 'kept on the coordinator (local tables)'

/** The tables of one row of the plan's table, by the row's first cell. */
export function plannedTables(kind: string): string[] {
  const row = SHARDING_PLAN.split('\n').find((line) => line.startsWith(`| ${kind} |`))
  if (!row) throw new Error(`docs/scaling.md has no row "${kind}"`)
  return [...(row.split('|')[2] ?? '').matchAll(/`([a-z_]+)`/g)].map((match) => match[1] as string)
}
