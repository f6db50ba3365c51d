import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../../db/connect.js'
import { SeedRefused, seedDemoPractice } from '../../../scripts/seed/demo-practice.js'
import { verifyPassword } from '../../../src/identity/password-hashing.js'
import { createOrganization } from '../../../src/modules/users/service.js'
import { openTestDatabase } from '../../helpers/app.js'

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
    // The measurements of each vital signs panel, which the database keeps with it, aside.
    const members = await sql<{ n: number }>`select count(*)::int as n from clinical_records
      where organization_id = ${organization.id} and kind = 'VITAL_SIGN'`.execute(handle.db)
    expect(await count('clinical_records', organization.id)).toBe(
      counts.clinicalRecords + Number(members.rows[0]?.n),
    )
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

/** A practice's own records: an organization with one patient whose address is on the demo domain. */
async function realPractice(database: DatabaseHandle) {
  const organization = await createOrganization(database.db, { name: 'Test Practice', groupPath: '/test' })
  await database.db
    .insertInto('patients')
    .values({
      organization_id: organization.id,
      first_name: 'Test',
      last_name: 'Patient',
      date_of_birth: '1980-01-01',
      gender: 'Other',
      email: 'test.patient@demo.invalid',
    })
    .execute()
  return organization
}

describe('npm run seed beside a patient whose address is on the demo domain', () => {
  it('refuses unless forced, as for any real record, and does not take it for the demo', async () => {
    const other = await openTestDatabase()
    try {
      await realPractice(other)
      const refused = seedDemoPractice(other.db, options)
      await expect(refused).rejects.toBeInstanceOf(SeedRefused)
      await expect(refused).rejects.toThrow(/1 patients and providers that are not demo data[\s\S]*--force/)
    } finally {
      await other.close()
    }
  })

  it('seeds with --force into an organization of its own, whose administrator gets a temporary password', async () => {
    const other = await openTestDatabase()
    try {
      const organization = await realPractice(other)
      const forced = await seedDemoPractice(other.db, { ...options, patients: 2, force: true })
      expect(forced.organizationId).not.toBe(organization.id)
      expect(await count('patients', forced.organizationId, other)).toBe(2)
      const administrator = forced.administrator
      expect(administrator?.email).toBe('practice.manager@demo.invalid')
      const account = await other.db
        .selectFrom('users')
        .select(['organization_id', 'roles', 'password_hash', 'password_change_required'])
        .where('email', '=', administrator?.email as string)
        .executeTakeFirstOrThrow()
      expect(account).toMatchObject({
        organization_id: forced.organizationId,
        roles: ['ADMIN'],
        password_change_required: true,
      })
      expect(
        await verifyPassword(administrator?.temporaryPassword as string, account.password_hash as string),
      ).toBe(true)
      // Once there, the demo is recognised by what only it creates, --force or not.
      await expect(seedDemoPractice(other.db, { ...options, force: true })).rejects.toThrow(
        `The demo practice is already there (organization ${forced.organizationId}); nothing to do.`,
      )
    } finally {
      await other.close()
    }
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
