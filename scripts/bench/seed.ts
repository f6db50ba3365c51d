import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import { fillPatientNameWords } from '../../db/migrations/0015_patient_name_words.js'
import { hashPassword } from '../../src/identity/password-hashing.js'
import { isValidNpi } from '../../src/modules/providers/npi.js'

export const BENCH_PASSWORD = 'benchmark-password-1'

/** The body of every patient a benchmark creates through the API. */
export const CREATED_PATIENT = JSON.stringify({
  identification: { firstName: 'Bench', lastName: 'Created', dateOfBirth: '1980-01-01', gender: 'Other' },
  contact: { email: 'bench.created@example.test' },
})

export const FIRST_NAMES = [
  'James',
  'Mary',
  'Robert',
  'Patricia',
  'John',
  'Jennifer',
  'Michael',
  'Linda',
  'David',
  'Elizabeth',
  'William',
  'Barbara',
  'Richard',
  'Susan',
  'Joseph',
  'Jessica',
  'Thomas',
  'Sarah',
  'Carlos',
  'Maria',
  'Wei',
  'Aisha',
  'Hiroshi',
  'Fatima',
  'Ivan',
  'Olga',
  'Pedro',
  'Ana',
  'Kwame',
  'Amara',
]
export const LAST_NAMES = [
  'Smith',
  'Johnson',
  'Williams',
  'Brown',
  'Jones',
  'Garcia',
  'Miller',
  'Davis',
  'Rodriguez',
  'Martinez',
  'Hernandez',
  'Lopez',
  'Gonzalez',
  'Wilson',
  'Anderson',
  'Thomas',
  'Taylor',
  'Moore',
  'Jackson',
  'Martin',
  'Lee',
  'Perez',
  'Thompson',
  'White',
  'Harris',
  'Sanchez',
  'Clark',
  'Ramirez',
  'Lewis',
  'Robinson',
  'Walker',
  'Young',
  'Allen',
  'King',
  'Wright',
  'Scott',
  'Torres',
  'Nguyen',
  'Hill',
  'Flores',
  'Green',
  'Adams',
  'Nelson',
  'Baker',
  'Hall',
  'Rivera',
  'Campbell',
  'Mitchell',
  'Carter',
  'Roberts',
  'Kowalski',
  'Novak',
  'Petrov',
  'Tanaka',
  'Okafor',
  'Haddad',
  'Cohen',
  'Silva',
  'Ivanova',
  'Schmidt',
]

export interface Seeded {
  organizationId: number
  email: string
  providerIds: number[]
  firstPatientId: number
  lastPatientId: number
}

const BATCH = 100_000

/** A valid, distinct NPI per benchmark provider. */
function npiFor(index: number): string {
  const base = `19${String(index).padStart(7, '0')}`
  return base + [...'0123456789'].find((digit) => isValidNpi(base + digit))
}

const textArray = (values: string[]) => sql`array[${sql.join(values.map((value) => sql.lit(value)))}]::text[]`

/**
 * One practice with an administrator, providers with weekly hours and `patients` patients, plus
 * appointments and vital signs in proportion — in bulk SQL, so a million patients take minutes.
 */
export async function seed(db: Db, patients: number): Promise<Seeded> {
  const organization = await db
    .insertInto('organizations')
    .values({ name: 'Benchmark Practice', group_path: '/benchmark' })
    .returning('id')
    .executeTakeFirstOrThrow()
  const email = 'bench@example.test'
  const user = await db
    .insertInto('users')
    .values({
      organization_id: organization.id,
      subject: 'benchmark-admin',
      email,
      password_hash: await hashPassword(BENCH_PASSWORD),
      first_name: 'Bench',
      last_name: 'Admin',
      roles: ['ADMIN', 'PROVIDER'],
    })
    .returning('id')
    .executeTakeFirstOrThrow()

  const providerIds: number[] = []
  for (let i = 0; i < 10; i++) {
    const provider = await db
      .insertInto('providers')
      .values({
        organization_id: organization.id,
        user_id: null,
        first_name: FIRST_NAMES[i] as string,
        last_name: LAST_NAMES[i] as string,
        title: 'MD',
        specialty: 'Family Medicine',
        npi: npiFor(i),
        email: null,
        phone_number: null,
        time_zone: 'UTC',
        slot_minutes: 15,
        created_by: user.id,
        updated_by: user.id,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    providerIds.push(provider.id)
    await db
      .insertInto('provider_hours')
      .values(
        [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({
          provider_id: provider.id,
          organization_id: organization.id,
          weekday,
          start_time: '08:00:00',
          end_time: '18:00:00',
        })),
      )
      .execute()
  }

  // The count and name-word triggers would run a million times; both are rebuilt in bulk instead.
  // Every first name meets every last name equally often.
  await sql`alter table patients disable trigger user`.execute(db)
  const before = await sql<{ id: number }>`select coalesce(max(id), 0)::int as id from patients`.execute(db)
  for (let offset = 0; offset < patients; offset += BATCH) {
    const count = Math.min(BATCH, patients - offset)
    await sql`
      insert into patients (organization_id, first_name, last_name, date_of_birth, gender, email, phone_number, status, created_by, updated_by)
      select ${organization.id},
        (${textArray(FIRST_NAMES)})[1 + (i::bigint * 7919 % ${FIRST_NAMES.length})::int],
        (${textArray(LAST_NAMES)})[1 + ((i / ${FIRST_NAMES.length})::bigint * 104729 % ${LAST_NAMES.length})::int],
        date '1930-01-01' + ((i * 37) % 30000),
        (array['Male', 'Female', 'Other', 'Unknown'])[1 + i % 4],
        'patient' || i || '@example.test',
        '+1 555 ' || lpad((i % 10000000)::text, 7, '0'),
        case when i % 10 = 0 then 'INACTIVE' else 'ACTIVE' end,
        ${user.id}, ${user.id}
      from generate_series(${offset + 1}::int, ${offset + count}::int) as i`.execute(db)
  }
  await sql`alter table patients enable trigger user`.execute(db)
  await fillPatientNameWords(db, organization.id)
  await sql`delete from patient_counts where organization_id = ${organization.id}`.execute(db)
  await sql`
    insert into patient_counts (organization_id, status, shard, live_count)
    select organization_id, status, 0, count(*) from patients
    where organization_id = ${organization.id} and deleted_at is null group by organization_id, status`.execute(
    db,
  )
  const firstPatientId = before.rows[0]?.id ?? 0

  // One appointment per ten patients over the past and coming days, on a 15-minute grid that
  // never overlaps; one vital-signs record per two patients.
  await sql`
    insert into appointments (organization_id, patient_id, provider_id, appointment_date, appointment_time, time_zone,
      starts_at, ends_at, duration_minutes, appointment_type, priority, status, created_by, updated_by)
    select ${organization.id}, ${firstPatientId} + 1 + n * 10, (${sql.lit(`{${providerIds.join(',')}}`)}::int[])[1 + n % 10],
      slot::date, slot::time, 'UTC', slot, slot + interval '15 minutes', 15,
      'FOLLOW_UP', 'ROUTINE', 'SCHEDULED', ${user.id}, ${user.id}
    from (
      select n, timestamptz '2026-01-01 08:00:00+00' + ((n / 10) / 40) * interval '1 day' + ((n / 10) % 40) * interval '15 minutes' as slot
      from generate_series(0, ${Math.floor(patients / 10) - 1}) as n
    ) as grid`.execute(db)
  await sql`
    insert into clinical_records (organization_id, patient_id, kind, status, effective_at, data, recorded_by, updated_by)
    select ${organization.id}, ${firstPatientId} + n * 2 + 1, 'VITAL_SIGNS', 'FINAL', now() - (n % 365) * interval '1 day',
      jsonb_build_object('status', 'FINAL', 'systolic', 110 + n % 40, 'diastolic', 70 + n % 20, 'heartRate', 60 + n % 40,
        'respiratoryRate', null, 'temperatureCelsius', 36.8, 'spo2', 97, 'heightCm', null, 'weightKg', null, 'bmi', null, 'painScore', null),
      ${user.id}, ${user.id}
    from generate_series(0, ${Math.floor(patients / 2) - 1}) as n`.execute(db)
  // As autovacuum would leave a settled table: statistics, and a visibility map for index-only scans.
  await sql`vacuum analyze`.execute(db)
  return {
    organizationId: organization.id,
    email,
    providerIds,
    firstPatientId: firstPatientId + 1,
    lastPatientId: firstPatientId + patients,
  }
}
