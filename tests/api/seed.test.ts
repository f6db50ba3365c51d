import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { SeedRefused, seedDemoPractice } from '../../scripts/seed/demo-practice.js'
import { createOrganization } from '../../src/modules/users/service.js'
import { openTestDatabase } from '../helpers/app.js'

// A database of its own: the refusal depends on everything in it.
let handle: DatabaseHandle
beforeAll(async () => {
  handle = await openTestDatabase()
})
afterAll(async () => {
  await handle.close()
})

const options = { patients: 8, force: false, billing: { currency: 'USD', taxRateBasisPoints: 0 } }
const count = async (
  table:
    | 'patients'
    | 'providers'
    | 'appointments'
    | 'encounters'
    | 'clinical_records'
    | 'invoices'
    | 'payments'
    | 'messages',
  organizationId: number,
  database: DatabaseHandle = handle,
) =>
  Number(
    (
      await sql<{
        n: number
      }>`select count(*)::int as n from ${sql.table(table)} where organization_id = ${organizationId}`.execute(
        database.db,
      )
    ).rows[0]?.n,
  )

describe('npm run seed', () => {
  it("fills an empty database's only organization with a demo practice", async () => {
    const organization = await createOrganization(handle.db, {
      name: 'Default Practice',
      groupPath: '/default-practice',
    })
    const counts = await seedDemoPractice(handle.db, options)
    expect(counts.organizationId).toBe(organization.id)
    expect(counts.providers).toBe(6)
    expect(counts.patients).toBe(8)
    expect(await count('providers', organization.id)).toBe(6)
    expect(await count('patients', organization.id)).toBe(8)
    expect(await count('appointments', organization.id)).toBe(counts.appointments)
    expect(await count('encounters', organization.id)).toBe(counts.encounters)
    expect(await count('clinical_records', organization.id)).toBe(counts.clinicalRecords)
    expect(await count('invoices', organization.id)).toBe(counts.invoices)
    expect(await count('messages', organization.id)).toBe(counts.messages)
    expect(counts.appointments).toBeGreaterThan(0)
    expect(counts.encounters).toBeGreaterThan(counts.patients / 2)
    expect(counts.clinicalRecords).toBeGreaterThanOrEqual(counts.encounters)
    expect(counts.invoices).toBe(counts.encounters)
    expect(counts.payments).toBeGreaterThan(0)
    const hours = await handle.db
      .selectFrom('provider_hours')
      .innerJoin('providers', 'providers.id', 'provider_hours.provider_id')
      .select('provider_hours.weekday')
      .where('providers.organization_id', '=', organization.id)
      .execute()
    expect(hours.length).toBe(6 * 10)
  })

  it('refuses a second run: the demo practice is already there', async () => {
    await expect(seedDemoPractice(handle.db, { ...options, force: true })).rejects.toThrow(/already there/)
  })
})

describe('npm run seed on a database with real records', () => {
  it('refuses unless forced', async () => {
    const other = await openTestDatabase()
    try {
      const organization = await createOrganization(other.db, { name: 'Real Practice', groupPath: '/real' })
      await other.db
        .insertInto('providers')
        .values({
          organization_id: organization.id,
          first_name: 'Real',
          last_name: 'Clinician',
          title: 'MD',
          specialty: 'Family Medicine',
          npi: '1234567893',
          email: 'real@clinic.example',
          phone_number: null,
          time_zone: 'UTC',
          slot_minutes: 30,
          user_id: null,
          created_by: null,
          updated_by: null,
        })
        .execute()
      const refused = seedDemoPractice(other.db, options)
      await expect(refused).rejects.toBeInstanceOf(SeedRefused)
      await expect(refused).rejects.toThrow(/not demo data[\s\S]*--force/)
      expect(await other.db.selectFrom('patients').select('id').execute()).toEqual([])

      const forced = await seedDemoPractice(other.db, { ...options, patients: 2, force: true })
      expect(forced.patients).toBe(2)
      // Its own organization: demo records never mix with a real practice's.
      expect(forced.organizationId).not.toBe(organization.id)
      expect(await count('patients', organization.id, other)).toBe(0)
      expect(await count('patients', forced.organizationId, other)).toBe(2)
    } finally {
      await other.close()
    }
  })
})
