import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, newOrganization } from '../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
  await sql`create extension if not exists pgstattuple`.execute(app.db)
})
afterAll(async () => {
  await app.close()
})

const pendingPages = async () =>
  (
    await sql<{ pending_pages: number }>`
      select pending_pages from pgstatginindex('patients_search_trgm_idx')`.execute(app.db)
  ).rows[0]?.pending_pages

describe('the patient search index after many registrations', () => {
  it('keeps its pending list within 128 kB, and searches find the newest patients', async () => {
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    // 3,000 registrations put thousands of entries in the pending list: some 300 pages at the
    // default limit of 4 MB.
    await sql`
      insert into patients (organization_id, first_name, last_name, date_of_birth, gender, email, mrn,
        created_by, updated_by)
      select ${org.id}, 'Pending' || n, 'Listcheck', date '1980-01-01', 'Other',
        'pending' || n || '@example.test', 'PL' || n, ${user.id}, ${user.id}
      from generate_series(1, 3000) as n`.execute(app.db)
    expect(await pendingPages()).toBeLessThanOrEqual(128 / 8)
    const found = await app.inject({
      url: '/api/patients/search?q=pending2999%20listcheck',
      headers: bearer(user.token),
    })
    expect(found.statusCode).toBe(200)
    expect(found.json().data.totalElements).toBe(1)
    expect(found.json().data.content[0].identification.firstName).toBe('Pending2999')
  })
})
