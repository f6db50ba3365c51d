import { randomBytes } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import type { Actor } from '../../src/access/organization-scope.js'
import { createAppointment } from '../../src/modules/appointments/service.js'
import { createInvoice, recordPayment } from '../../src/modules/billing/service.js'
import { allergies } from '../../src/modules/clinical/kinds/allergies.js'
import { conditions } from '../../src/modules/clinical/kinds/conditions.js'
import { labResults } from '../../src/modules/clinical/kinds/lab-results.js'
import { medications } from '../../src/modules/clinical/kinds/medications.js'
import { vitalSigns } from '../../src/modules/clinical/kinds/vital-signs.js'
import { createRecord } from '../../src/modules/clinical/service.js'
import { createEncounter, signEncounter } from '../../src/modules/encounters/service.js'
import { sendMessage } from '../../src/modules/messages/service.js'
import { getOrganization, updateOrganization } from '../../src/modules/organizations/service.js'
import { createPatient } from '../../src/modules/patients/service.js'
import { isValidNpi } from '../../src/modules/providers/npi.js'
import { createProvider } from '../../src/modules/providers/service.js'
import { createOrganization, createUser } from '../../src/modules/users/service.js'

/** The demo's addresses: `.invalid` is reserved (RFC 2606), so no mail to them goes anywhere. */
const DEMO_DOMAIN = 'demo.invalid'

export interface DemoOptions {
  patients: number
  /** Seed even if the database holds records that are not demo data. */
  force: boolean
  billing: { currency: string; taxRateBasisPoints: number }
}

export interface DemoCounts {
  organizationId: number
  /** Set when the seed created the administrator it acts as: the way into the demo organization. */
  administrator?: { email: string; temporaryPassword: string }
  providers: number
  patients: number
  appointments: number
  encounters: number
  clinicalRecords: number
  invoices: number
  payments: number
  messages: number
}

/** Why the seed refused to run; the command prints it and exits with 1. */
export class SeedRefused extends Error {}

const FIRST = ['James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David']
  .concat(['Elizabeth', 'William', 'Barbara', 'Carlos', 'Maria', 'Wei', 'Aisha', 'Hiroshi', 'Fatima'])
  .concat(['Ivan', 'Olga', 'Pedro', 'Ana', 'Kwame', 'Amara', 'Noah', 'Emma', 'Liam', 'Sofia'])
const LAST = ['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez']
  .concat(['Martinez', 'Hernandez', 'Lopez', 'Wilson', 'Anderson', 'Taylor', 'Moore', 'Jackson'])
  .concat(['Lee', 'Nguyen', 'Kowalski', 'Novak', 'Petrov', 'Tanaka', 'Okafor', 'Haddad', 'Cohen', 'Silva'])
const GENDERS = ['Female', 'Male', 'Female', 'Male', 'Other', 'Unknown'] as const

// US Core demographics for two patients in three, taken in turn (not drawn, so the demo's other
// random choices stay as they were).
const DEMOGRAPHICS = [
  {
    race: { categories: ['2106-3' as const], detailed: ['2108-9'] },
    ethnicity: { category: '2186-5' as const },
    birthSex: 'F' as const,
    preferredLanguage: 'en',
  },
  {
    race: { categories: ['2054-5' as const, '2106-3' as const], text: 'Black and White' },
    ethnicity: { category: '2135-2' as const, detailed: ['2148-5'] },
    birthSex: 'M' as const,
    genderIdentity: '446151000124109' as const,
    preferredLanguage: 'es',
  },
  {
    race: { categories: ['2028-9' as const], detailed: ['2036-2'] },
    ethnicity: { category: 'ASKU' as const },
    birthSex: 'UNK' as const,
    genderIdentity: '33791000087105' as const,
  },
]

const CLINICIANS = [
  { first: 'Grace', last: 'Okafor', title: 'MD', specialty: 'Family Medicine' },
  { first: 'Daniel', last: 'Reyes', title: 'MD', specialty: 'Internal Medicine' },
  { first: 'Hannah', last: 'Lindqvist', title: 'DO', specialty: 'Pediatrics' },
  { first: 'Samuel', last: 'Adeyemi', title: 'MD', specialty: 'Cardiology' },
  { first: 'Mei', last: 'Chen', title: 'NP', specialty: 'Family Medicine' },
  { first: 'Omar', last: 'Haddad', title: 'PA', specialty: 'Dermatology' },
]

const COMPLAINTS = [
  {
    complaint: 'Persistent cough',
    code: 'R05.9',
    description: 'Cough, unspecified',
    plan: 'Fluids, rest; return if fever',
  },
  { complaint: 'Headache', code: 'R51.9', description: 'Headache, unspecified', plan: 'Ibuprofen as needed' },
  {
    complaint: 'Blood pressure check',
    code: 'I10',
    description: 'Essential hypertension',
    plan: 'Continue lisinopril; recheck in 3 months',
  },
  {
    complaint: 'Annual physical',
    code: 'Z00.00',
    description: 'General adult examination',
    plan: 'Routine labs; return in a year',
  },
  {
    complaint: 'Lower back pain',
    code: 'M54.50',
    description: 'Low back pain, unspecified',
    plan: 'Physiotherapy referral',
  },
  {
    complaint: 'Rash on forearm',
    code: 'L30.9',
    description: 'Dermatitis, unspecified',
    plan: 'Hydrocortisone cream twice daily',
  },
]
const ALLERGENS = [
  { substance: 'Penicillin', category: 'MEDICATION', manifestation: 'Hives' },
  { substance: 'Peanuts', category: 'FOOD', manifestation: 'Swelling of the lips' },
  { substance: 'Latex', category: 'ENVIRONMENT', manifestation: 'Contact dermatitis' },
] as const
const CONDITIONS = [
  { icd10Code: 'E11.9', description: 'Type 2 diabetes mellitus' },
  { icd10Code: 'I10', description: 'Essential hypertension' },
  { icd10Code: 'J45.909', description: 'Asthma, uncomplicated' },
  { icd10Code: 'E78.5', description: 'Hyperlipidemia, unspecified' },
]
const MEDICATIONS = [
  { name: 'Metformin 500 mg tablet', rxnormCode: '861007', dose: 500, frequency: 'twice daily' },
  { name: 'Lisinopril 10 mg tablet', rxnormCode: '314076', dose: 10, frequency: 'once daily' },
  { name: 'Atorvastatin 20 mg tablet', rxnormCode: '617310', dose: 20, frequency: 'once daily at night' },
]
const SERVICES = [
  { code: '99213', description: 'Office visit, established patient', unitPrice: 12_500 },
  { code: '99203', description: 'Office visit, new patient', unitPrice: 17_500 },
  { code: '80053', description: 'Comprehensive metabolic panel', unitPrice: 4_200 },
  { code: '93000', description: 'Electrocardiogram', unitPrice: 6_800 },
]

/** A small deterministic generator: the same seed gives the same practice. */
function generator(seed: number) {
  let state = seed >>> 0
  const next = () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
    return state / 2 ** 32
  }
  return {
    chance: (p: number) => next() < p,
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)] as T,
  }
}

const dayOffset = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)

function npiFor(index: number): string {
  const base = `17${String(index).padStart(7, '0')}`
  return base + [...'0123456789'].find((digit) => isValidNpi(base + digit))
}

// Monday to Friday, a lunch break; appointments are booked on this grid.
const WORKDAYS = ['MONDAY', 'TUESDAY', 'WEDNESDAY', 'THURSDAY', 'FRIDAY'] as const
const WEEKLY_HOURS = WORKDAYS.flatMap((dayOfWeek) => [
  { dayOfWeek, startTime: '08:00:00', endTime: '12:00:00' },
  { dayOfWeek, startTime: '13:00:00', endTime: '17:00:00' },
])
const SLOT_TIMES = ['08:00', '08:30', '09:00', '09:30', '10:00', '10:30', '11:00', '11:30']
  .concat(['13:00', '13:30', '14:00', '14:30', '15:00', '15:30', '16:00', '16:30'])
  .map((time) => `${time}:00`)

/** Free future weekday slots of one provider, in order: the next 8 weeks. */
function* slots() {
  for (let day = 1; day <= 56; day++) {
    const date = dayOffset(day)
    const weekday = new Date(`${date}T12:00:00Z`).getUTCDay()
    if (weekday === 0 || weekday === 6) continue
    for (const time of SLOT_TIMES) yield { date, time }
  }
}

const clinicianEmail = (clinician: { first: string; last: string }) =>
  `${clinician.first}.${clinician.last}@${DEMO_DOMAIN}`.toLowerCase()

/**
 * Refuses when the demo practice was already seeded, recognised by its clinicians' accounts (only
 * the seed creates them, and an address has one account in the whole database, so there can be no
 * second demo even when forced). Refuses too when the database holds patients or providers (a real
 * practice, or someone's tests) unless forced.
 */
async function checkTarget(db: Db, force: boolean) {
  const seeded = await db
    .selectFrom('users')
    .select('organization_id')
    .where((eb) => eb(eb.fn('lower', ['email']), 'in', CLINICIANS.map(clinicianEmail)))
    .executeTakeFirst()
  if (seeded) {
    throw new SeedRefused(
      `The demo practice is already there (organization ${seeded.organization_id}); nothing to do.`,
    )
  }
  const { rows } = await sql<{ records: number }>`
    select (select count(*)::int from patients) + (select count(*)::int from providers) as records
  `.execute(db)
  const records = rows[0]?.records ?? 0
  if (records > 0 && !force) {
    throw new SeedRefused(
      `The database holds ${records} patients and providers that are not demo data. ` +
        'Seed an empty database, or pass --force to add the demo practice (as an organization of its own).',
    )
  }
  return { empty: records === 0 }
}

// As long as the operator script's generated passwords: 24 base64url characters.
const TEMPORARY_PASSWORD_BYTES = 18

/**
 * The organization to fill: in an empty database the only one there (the bootstrap's, so its
 * administrator sees the demo at once); otherwise a new "Demo Practice", never mixed with real
 * records. And an administrator of it to act as: when the seed has to create one, it gets a
 * temporary password, so that someone can sign in to the new organization.
 */
async function target(
  db: Db,
  empty: boolean,
): Promise<{ manager: Actor; administrator?: DemoCounts['administrator'] }> {
  const organizations = await db.selectFrom('organizations').select('id').orderBy('id').limit(2).execute()
  const organizationId =
    empty && organizations.length === 1
      ? (organizations[0] as { id: number }).id
      : (await createOrganization(db, { name: 'Demo Practice', groupPath: '/demo-practice' })).id
  const admin = await db
    .selectFrom('users')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where(sql<boolean>`'ADMIN' = any(roles)`)
    .where('active', '=', true)
    .orderBy('id')
    .executeTakeFirst()
  if (admin) return { manager: { organizationId, userId: admin.id } }
  const administrator = {
    email: `practice.manager@${DEMO_DOMAIN}`,
    temporaryPassword: randomBytes(TEMPORARY_PASSWORD_BYTES).toString('base64url'),
  }
  const created = await createUser(db, {
    organizationId,
    email: administrator.email,
    password: administrator.temporaryPassword,
    temporaryPassword: true,
    firstName: 'Practice',
    lastName: 'Manager',
    roles: ['ADMIN'],
  })
  return { manager: { organizationId, userId: created.id }, administrator }
}

/** The practice's own details, kept under its name: what its FHIR Organization and Location publish. */
async function describePractice(db: Db, manager: Actor): Promise<void> {
  const { name } = await getOrganization(db, manager, manager.organizationId)
  await updateOrganization(
    db,
    manager,
    manager.organizationId,
    {
      name,
      // Providers' NPIs are npiFor(1), npiFor(2), …: the practice's own is apart from them.
      npi: npiFor(0),
      phoneNumber: '+1 555 010 2000',
      email: `front-desk@${DEMO_DOMAIN}`,
      address: {
        street: '12 Main Street',
        city: 'Springfield',
        state: 'IL',
        postalCode: '62701',
        country: 'US',
      },
    },
    undefined,
  )
}

/**
 * A realistic small practice through the service's own functions (so every rule, number and event
 * is the real one): providers with weekly hours and accounts, patients, upcoming appointments,
 * signed visits with vitals, chart entries, invoices (some paid) and messages between staff.
 */
export async function seedDemoPractice(db: Db, options: DemoOptions): Promise<DemoCounts> {
  const { empty } = await checkTarget(db, options.force)
  const { manager, administrator } = await target(db, empty)
  const random = generator(20_260_101)
  const counts: DemoCounts = {
    organizationId: manager.organizationId,
    ...(administrator ? { administrator } : {}),
    providers: 0,
    patients: 0,
    appointments: 0,
    encounters: 0,
    clinicalRecords: 0,
    invoices: 0,
    payments: 0,
    messages: 0,
  }

  await describePractice(db, manager)

  const clinicians: { actor: Actor; providerId: number; free: Generator<{ date: string; time: string }> }[] =
    []
  for (const [index, clinician] of CLINICIANS.entries()) {
    const email = clinicianEmail(clinician)
    const user = await createUser(db, {
      organizationId: manager.organizationId,
      email,
      firstName: clinician.first,
      lastName: clinician.last,
      roles: ['PROVIDER'],
    })
    const provider = await createProvider(db, manager, {
      firstName: clinician.first,
      lastName: clinician.last,
      title: clinician.title,
      specialty: clinician.specialty,
      npi: npiFor(index + 1),
      email,
      phoneNumber: `+1 555 020 ${String(1000 + index)}`,
      timeZone: 'America/Chicago',
      slotMinutes: 30,
      weeklyHours: WEEKLY_HOURS,
      userId: user.id,
    })
    clinicians.push({
      actor: { organizationId: manager.organizationId, userId: user.id },
      providerId: provider.id,
      free: slots(),
    })
    counts.providers += 1
  }

  for (let index = 0; index < options.patients; index++) {
    const first = random.pick(FIRST)
    const last = random.pick(LAST)
    const patient = await createPatient(db, manager, {
      identification: {
        firstName: first,
        lastName: last,
        dateOfBirth: dayOffset(-random.int(365, 90 * 365)),
        gender: random.pick(GENDERS),
      },
      contact: {
        email: `${first}.${last}.${index + 1}@${DEMO_DOMAIN}`.toLowerCase(),
        phoneNumber: `+1 555 ${String(random.int(100, 999))} ${String(random.int(1000, 9999))}`,
      },
      ...(index % 3 === 2 ? {} : DEMOGRAPHICS[Math.floor(index / 3) % DEMOGRAPHICS.length]),
    })
    counts.patients += 1
    const clinician = random.pick(clinicians)

    if (random.chance(0.6)) {
      const slot = clinician.free.next()
      if (!slot.done) {
        await createAppointment(db, manager, {
          patientId: patient.id,
          providerId: clinician.providerId,
          appointmentDate: slot.value.date,
          appointmentTime: slot.value.time,
          appointmentType: random.pick([
            'OFFICE_VISIT',
            'FOLLOW_UP',
            'ANNUAL_PHYSICAL',
            'TELEHEALTH',
          ] as const),
          reason: random.pick(COMPLAINTS).complaint,
        })
        counts.appointments += 1
      }
    }

    const visits = random.chance(0.8) ? random.int(1, 3) : 0
    for (let visit = 0; visit < visits; visit++) {
      const reason = random.pick(COMPLAINTS)
      const encounter = await createEncounter(db, clinician.actor, {
        patientId: patient.id,
        providerId: clinician.providerId,
        encounterDate: dayOffset(-random.int(2, 400)),
        encounterType: 'OFFICE_VISIT',
        chiefComplaint: reason.complaint,
        soapNote: {
          subjective: `${reason.complaint} reported by the patient`,
          assessment: { diagnoses: [{ icd10Code: reason.code, description: reason.description }] },
          plan: reason.plan,
        },
      })
      counts.encounters += 1
      await createRecord(db, vitalSigns, clinician.actor, patient.id, {
        systolic: random.int(105, 160),
        diastolic: random.int(65, 98),
        heartRate: random.int(55, 100),
        temperature: { value: random.int(361, 378) / 10, unit: 'C' },
        encounterId: encounter.id,
      })
      counts.clinicalRecords += 1
      // Most visits are signed; a few are left as drafts, as in any practice.
      if (random.chance(0.85)) {
        await signEncounter(db, clinician.actor, encounter.id)
        // Its diagnosis, recorded as a clinical record of its own on signing.
        counts.clinicalRecords += 1
      }

      const service = random.pick(SERVICES)
      const invoice = await createInvoice(
        db,
        manager,
        {
          patientId: patient.id,
          dueDate: dayOffset(30),
          lineItems: [
            {
              code: service.code,
              description: service.description,
              quantity: 1,
              unitPrice: service.unitPrice,
            },
          ],
        },
        options.billing,
      )
      counts.invoices += 1
      if (random.chance(0.5)) {
        await recordPayment(
          db,
          manager,
          {
            invoiceId: invoice.id,
            amount: invoice.balance,
            method: random.pick(['CARD', 'INSURANCE', 'CASH'] as const),
          },
          undefined,
        )
        counts.payments += 1
      }
    }

    if (random.chance(0.3)) {
      const allergen = random.pick(ALLERGENS)
      await createRecord(db, allergies, clinician.actor, patient.id, {
        substance: allergen.substance,
        category: allergen.category,
        reactions: [{ manifestation: allergen.manifestation }],
        severity: random.pick(['MILD', 'MODERATE', 'SEVERE'] as const),
      })
      counts.clinicalRecords += 1
    }
    if (random.chance(0.4)) {
      const condition = random.pick(CONDITIONS)
      await createRecord(db, conditions, clinician.actor, patient.id, {
        ...condition,
        onsetDate: dayOffset(-random.int(30, 3650)),
      })
      counts.clinicalRecords += 1
      const medication = random.pick(MEDICATIONS)
      await createRecord(db, medications, clinician.actor, patient.id, {
        ...medication,
        doseUnit: 'mg',
        route: 'ORAL',
      })
      counts.clinicalRecords += 1
    }
    if (random.chance(0.25)) {
      await createRecord(db, labResults, clinician.actor, patient.id, {
        testCode: '2345-7',
        testName: 'Glucose [Mass/volume] in Serum or Plasma',
        value: random.int(70, 190),
        unit: 'mg/dL',
        referenceRange: { low: 70, high: 99 },
      })
      counts.clinicalRecords += 1
    }
    if (random.chance(0.2)) {
      await sendMessage(db, clinician.actor, {
        recipientId: manager.userId,
        subject: 'Follow-up needed',
        body: 'Please schedule a follow-up visit in two weeks.',
        patientId: patient.id,
      })
      counts.messages += 1
    }
  }
  return counts
}
