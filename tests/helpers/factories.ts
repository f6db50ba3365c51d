import { randomUUID } from 'node:crypto'
import type { Role } from '../../src/access/roles.js'
import type { App } from '../../src/app.js'
import { hashPassword } from '../../src/identity/password-hashing.js'
import { isValidNpi } from '../../src/modules/providers/npi.js'
import { createOrganization } from '../../src/modules/users/service.js'

export const TEST_PASSWORD = 'correct-horse-battery-staple'
// Hashing is deliberately slow; tests share one hash of the common password.
let passwordHash: Promise<string> | undefined
const testPasswordHash = () => {
  passwordHash ??= hashPassword(TEST_PASSWORD)
  return passwordHash
}

export interface TestUser {
  id: number
  email: string
  subject: string
  organizationId: number
  groupPath: string
  roles: Role[]
  token: string
}

export interface TestOrganization {
  id: number
  groupPath: string
  /** A user of this organization with the given roles, and a valid access token for them. */
  user(...roles: Role[]): Promise<TestUser>
}

/** A fresh organization per test keeps tests independent without rolling anything back. */
export async function newOrganization(app: App): Promise<TestOrganization> {
  const groupPath = `/test/${randomUUID()}`
  const organization = await createOrganization(app.db, { name: `Practice ${groupPath}`, groupPath })
  return {
    id: organization.id,
    groupPath,
    async user(...roles: Role[]) {
      const subject = randomUUID()
      const email = `${subject}@example.test`
      const row = await app.db
        .insertInto('users')
        .values({
          organization_id: organization.id,
          subject,
          email,
          password_hash: await testPasswordHash(),
          first_name: 'Test',
          last_name: 'User',
          roles,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
      const user = { id: row.id, email, subject, organizationId: organization.id, groupPath, roles }
      return {
        ...user,
        get token() {
          return tokenFor(app, user)
        },
      }
    },
  }
}

export function tokenFor(
  app: App,
  user: { subject: string; email: string; roles: string[]; groupPath: string },
  lifetimeSeconds?: number,
  smart?: { scopes: string[]; patient?: string },
): string {
  if (!app.tokenIssuer) throw new Error('The app under test is not its own issuer')
  return app.tokenIssuer.issueAccessToken(
    {
      subject: user.subject,
      email: user.email,
      firstName: 'Test',
      lastName: 'User',
      roles: user.roles,
      groupPath: user.groupPath,
    },
    randomUUID(),
    { lifetimeSeconds, smart },
  )
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** Registers a patient through the API as `user` and returns its id. */
export async function createPatient(
  app: App,
  user: { token: string },
  body: object = patientBody(),
): Promise<number> {
  const response = await app.inject({
    method: 'POST',
    url: '/api/patients',
    headers: bearer(user.token),
    payload: body,
  })
  if (response.statusCode !== 201)
    throw new Error(`patient not created: ${response.statusCode} ${response.body}`)
  return response.json().data.id
}

let patientCounter = 0

/** A valid creation body; each call yields a different name so searches can tell them apart. */
export function patientBody(overrides: Record<string, unknown> = {}) {
  patientCounter += 1
  return {
    identification: {
      firstName: 'Jane',
      lastName: `Doe${patientCounter}`,
      dateOfBirth: '1984-07-12',
      gender: 'Female',
    },
    contact: { email: `jane${patientCounter}@example.com`, phoneNumber: '+1 555 010 4477' },
    ...overrides,
  }
}

/** The valid NPI of nine digits: they and their check digit (the Luhn digit over 80840 and them). */
export const npiOf = (nineDigits: string) =>
  nineDigits + [...'0123456789'].find((digit) => isValidNpi(nineDigits + digit))

let npiCounter = 0

/** A valid NPI, new on each call. */
export function uniqueNpi(): string {
  npiCounter += 1
  return npiOf(`1${String(process.pid % 10_000).padStart(4, '0')}${String(npiCounter).padStart(4, '0')}`)
}

const EVERY_DAY = ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY', 'SATURDAY', 'SUNDAY'] as const

/** Weekly hours with the same intervals on every day, e.g. everyDay(['09:00', '12:00'], ['13:00', '17:00']). */
export function everyDay(...intervals: [string, string][]) {
  return EVERY_DAY.flatMap((dayOfWeek) =>
    intervals.map(([start, end]) => ({ dayOfWeek, startTime: `${start}:00`, endTime: `${end}:00` })),
  )
}

/** A valid provider creation body: UTC, 30-minute slots, 09:00–17:00 every day unless overridden. */
export function providerBody(overrides: Record<string, unknown> = {}) {
  return {
    firstName: 'Grace',
    lastName: 'Hopper',
    title: 'MD',
    specialty: 'Family Medicine',
    npi: uniqueNpi(),
    timeZone: 'UTC',
    slotMinutes: 30,
    weeklyHours: everyDay(['09:00', '17:00']),
    ...overrides,
  }
}

/** A date `days` after today (UTC), YYYY-MM-DD. */
export function daysFromToday(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)
}

/** A valid encounter note of today (an office visit for a headache), without its patient and provider. */
export function encounterNote() {
  return {
    encounterDate: daysFromToday(0),
    encounterType: 'OFFICE_VISIT',
    chiefComplaint: 'Headache',
    soapNote: {
      subjective: 'Headache for three days',
      objective: 'BP 128/82',
      assessment: {
        text: 'Tension-type headache',
        diagnoses: [
          { icd10Code: 'G44.209', description: 'Tension-type headache, unspecified, not intractable' },
        ],
      },
      plan: 'Ibuprofen as needed',
    },
  }
}

/** The n-th Sunday of a month of a year (US daylight saving starts on the 2nd Sunday of March, ends on the 1st of November). */
export function nthSunday(year: number, month: number, n: number): string {
  const first = new Date(Date.UTC(year, month - 1, 1))
  const day = 1 + ((7 - first.getUTCDay()) % 7) + (n - 1) * 7
  return new Date(Date.UTC(year, month - 1, day)).toISOString().slice(0, 10)
}

/**
 * A document row as an upload leaves it while its bytes are still streaming (PENDING), written
 * straight to the database: what a crash would leave behind.
 */
export async function insertPendingDocument(
  app: App,
  user: TestUser,
  patientId: number,
  storageKey: string,
): Promise<number> {
  const { id } = await app.db
    .insertInto('documents')
    .values({
      organization_id: user.organizationId,
      patient_id: patientId,
      encounter_id: null,
      title: 'Uploading',
      category: 'OTHER',
      content_type: 'text/plain',
      file_name: 'x.txt',
      storage_key: storageKey,
      uploaded_by: user.id,
      size_bytes: null,
      sha256: null,
      deleted_at: null,
      deleted_by: null,
      purged_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return id
}
