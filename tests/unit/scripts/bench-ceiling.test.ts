import { readFileSync } from 'node:fs'
import {
  type CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
} from 'kysely'
import { describe, expect, it } from 'vitest'
import type { Database, Db } from '../../../db/database.js'
import type { PatientListQuery } from '../../../schemas/patients.js'
import {
  SORTED_PAGE_SIZE,
  SORTED_PAGE_SQL,
  SORTED_PAGE_TOTAL_SQL,
} from '../../../scripts/bench/ceiling-statements.js'
import { listPatients } from '../../../src/modules/patients/service.js'

/** The statements `work` sends, compiled for PostgreSQL and answered with no rows. */
async function statementsOf(work: (db: Db) => Promise<unknown>): Promise<CompiledQuery[]> {
  const sent: CompiledQuery[] = []
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (introspected) => new PostgresIntrospector(introspected),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: (event) => void sent.push(event.query),
  })
  await work(db)
  return sent
}

describe("the benchmark's ceilings (scripts/bench/ceiling.ts)", () => {
  it('import none of the service’s code, only libraries and their own statements', () => {
    const imports = (file: string) =>
      [...readFileSync(file, 'utf8').matchAll(/from '([^']+)'/g)].map(([, specifier]) => specifier)
    expect(imports('scripts/bench/ceiling.ts')).toEqual(['fastify', 'pg', './ceiling-statements.js'])
    expect(imports('scripts/bench/ceiling-statements.ts')).toEqual([])
  })

  it('run the statements the service sends for the sorted first page of patients', async () => {
    const organizationId = 42
    // As the route passes the query string `?sort=lastName,asc` (the sync fields absent).
    const query = { page: 0, size: SORTED_PAGE_SIZE, sort: 'lastName,asc' } as PatientListQuery
    const sent = await statementsOf((db) => listPatients(db, { organizationId, userId: 1 }, query).page())
    const ceiling = [
      { sql: SORTED_PAGE_SQL, parameters: [organizationId, SORTED_PAGE_SIZE, 0] },
      { sql: SORTED_PAGE_TOTAL_SQL, parameters: [organizationId] },
    ]
    expect(sent.map(({ sql, parameters }) => ({ sql, parameters }))).toEqual(ceiling)
  })
})
