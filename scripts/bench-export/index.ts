import { createWriteStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import type { App } from '../../src/app.js'
import type { Seeded } from '../bench/seed.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'
import { seededBenchApp, seededDatabase } from '../lib/seeded-bench.js'

// A FHIR bulk export of a whole practice (patients with their appointments, encounters and vital
// signs) against a ceiling measured in the same run: the same rows streamed from PostgreSQL as JSON
// lines to disk, with no mapping, in pages of 1000 rows. Also the peak RSS of the service while
// it exports, and its by-id read rate during an export against its rate without one.
// Targets: export ≥ 0.5 × the ceiling; RSS ≤ 250 MB; reads during an export ≥ 0.7 × without.
// `npm run bench:export -- --patients 1000000`; BENCH_DATABASE_URL names the PostgreSQL server (the
// seeded database is kept there for the next run).

const { values } = parseArgs({
  options: {
    patients: { type: 'string', default: '1000000' },
    'read-seconds': { type: 'string', default: '5' },
  },
})
const PATIENTS = Number(values.patients)
const READ_SECONDS = Number(values['read-seconds'])
const PAGE = 1000
const READERS = 8
const TABLES = ['patients', 'appointments', 'encounters', 'clinical_records'] as const
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

/** One signed visit per ten patients, with its provider: the seed has no encounters of its own. */
async function addEncounters(db: Db, seeded: Seeded): Promise<void> {
  await sql`
    insert into encounters (organization_id, patient_id, provider_id, encounter_date, encounter_type,
      chief_complaint, diagnoses, status, signed_by, signed_at, created_by, updated_by)
    select ${seeded.organizationId}, ${seeded.firstPatientId} + n * 10 + 5,
      (${sql.lit(`{${seeded.providerIds.join(',')}}`)}::int[])[1 + n % 10],
      date '2025-01-01' + (n % 365), 'OFFICE_VISIT', 'Follow-up', '[{"icd10Code":"I10","description":"Hypertension"}]',
      'SIGNED', signer.id, timestamptz '2025-01-01 17:00:00+00' + (n % 365) * interval '1 day', null, null
    from generate_series(0, ${Math.floor(PATIENTS / 10) - 1}) as n,
      (select id from users where email = ${seeded.email}) as signer`.execute(db)
}

/** The ceiling: every row of the export's tables, paged by id, as JSON lines to one file. */
async function ceiling(db: Db, organizationId: number): Promise<{ rows: number; seconds: number }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ehr-bench-export-'))
  const started = process.hrtime.bigint()
  let rows = 0
  try {
    const out = createWriteStream(path.join(dir, 'rows.ndjson'))
    for (const table of TABLES) {
      let after = 0
      for (;;) {
        const page = await db
          .selectFrom(table)
          .selectAll()
          .where('organization_id', '=', organizationId)
          .where('id', '>', after)
          .orderBy('id')
          .limit(PAGE)
          .execute()
        for (const row of page) {
          if (!out.write(`${JSON.stringify(row)}\n`))
            await new Promise<void>((resolve) => out.once('drain', () => resolve()))
        }
        rows += page.length
        const last = page.at(-1) as { id: number } | undefined
        if (!last || page.length < PAGE) break
        after = last.id
      }
    }
    await new Promise<void>((resolve) => out.end(() => resolve()))
    return { rows, seconds: Number(process.hrtime.bigint() - started) / 1e9 }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Runs an export of the whole practice; resources written, seconds, and its status URL. */
async function exportAll(app: App, headers: Record<string, string>) {
  const started = await app.inject({
    url: '/fhir/R4/$export?_type=Patient,Appointment,Encounter,Observation',
    headers: { ...headers, prefer: 'respond-async' },
  })
  if (started.statusCode !== 202) throw new Error(`kick-off: ${started.statusCode} ${started.body}`)
  const status = String(started.headers['content-location'])
  const from = process.hrtime.bigint()
  await app.bulkExports.drainOnce()
  const seconds = Number(process.hrtime.bigint() - from) / 1e9
  const local = status.slice(status.indexOf('/fhir/R4'))
  const manifest = (await app.inject({ url: local, headers })).json() as { output: { count: number }[] }
  const resources = manifest.output.reduce((sum, file) => sum + file.count, 0)
  await app.inject({ method: 'DELETE', url: local, headers })
  return { resources, seconds }
}

/** The rate of by-id reads of random patients by READERS callers over `seconds`. */
async function readRate(app: App, headers: Record<string, string>, first: number, seconds: number) {
  const until = Date.now() + seconds * 1000
  let reads = 0
  await Promise.all(
    Array.from({ length: READERS }, async () => {
      while (Date.now() < until) {
        const id = first + Math.floor(Math.random() * PATIENTS)
        const response = await app.inject({ url: `/api/patients/${id}`, headers })
        if (response.statusCode !== 200) throw new Error(`read: ${response.statusCode}`)
        reads += 1
      }
    }),
  )
  return reads / seconds
}

async function main(): Promise<void> {
  const url = await seededDatabase(adminUrl, `ehr_bench_export_${PATIENTS}`, PATIENTS, addEncounters)
  const { app, headers } = await seededBenchApp(url, { BULK_EXPORT_WORKER: 'false' })
  try {
    const org = await app.db
      .selectFrom('organizations')
      .select('id')
      .where('group_path', '=', '/benchmark')
      .executeTakeFirstOrThrow()
    const firstPatient = await app.db
      .selectFrom('patients')
      .select((eb) => eb.fn.min('id').as('id'))
      .where('organization_id', '=', org.id)
      .executeTakeFirstOrThrow()

    // The export first, so that its peak RSS is not the ceiling's garbage.
    // Exports left by an interrupted run would be claimed first and skew the timing.
    await app.db.deleteFrom('bulk_exports').execute()
    process.stdout.write('Exporting…\n')
    const startRss = process.memoryUsage.rss()
    let peakRss = startRss
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage.rss())
    }, 100)
    const exported = await exportAll(app, headers)
    clearInterval(sampler)
    process.stdout.write(`  ${exported.resources} resources in ${exported.seconds.toFixed(1)} s\n`)

    process.stdout.write('Ceiling: streaming the rows as JSON lines…\n')
    const bare = await ceiling(app.db, org.id)
    process.stdout.write(`  ${bare.rows} rows in ${bare.seconds.toFixed(1)} s\n`)

    process.stdout.write('By-id reads without and during an export…\n')
    await readRate(app, headers, Number(firstPatient.id), 2) // warm-up
    const alone = await readRate(app, headers, Number(firstPatient.id), READ_SECONDS)
    const background = exportAll(app, headers)
    const during = await readRate(app, headers, Number(firstPatient.id), READ_SECONDS)
    await background

    const exportRate = exported.resources / exported.seconds
    const ceilingRate = bare.rows / bare.seconds
    const heading = 'FHIR bulk export (npm run bench:export)'
    const section = [
      `## ${heading}`,
      '',
      `A bulk export of a practice of ${PATIENTS} patients with their appointments, encounters and vital signs (Patient, Appointment, Encounter, Observation), in process on PostgreSQL at BENCH_DATABASE_URL with the production heap cap (--max-old-space-size=256, as npm run start:prod), against a ceiling measured in the same run: the same rows paged by id (${PAGE} a page) and written as JSON lines to disk with no mapping. Reads: ${READERS} callers reading random patients by id for ${READ_SECONDS} s, without and then during an export, after a warm-up. Targets: export ≥ 0.5 × ceiling; peak RSS ≤ 250 MB; reads during ≥ 0.7 × without.`,
      '',
      `\`npm run bench:export -- --patients ${PATIENTS}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}.`,
      '',
      '| measure | value | ratio |',
      '|---|---|---|',
      `| ceiling: rows streamed as JSON lines | ${Math.round(ceilingRate)} rows/s | 1 |`,
      `| export: FHIR resources written as NDJSON | ${Math.round(exportRate)} resources/s | ${(exportRate / ceilingRate).toFixed(2)} × ceiling |`,
      `| peak RSS while exporting (${Math.round(startRss / 1048576)} MB before) | ${Math.round(peakRss / 1048576)} MB | ${(peakRss / (250 * 1048576)).toFixed(2)} × the 250 MB limit |`,
      `| by-id reads without an export | ${Math.round(alone)} /s | 1 |`,
      `| by-id reads during an export | ${Math.round(during)} /s | ${(during / alone).toFixed(2)} × without |`,
    ].join('\n')
    process.stdout.write(`${section}\n`)
    await writeBenchmarkSection(heading, section)
  } finally {
    await app.close()
  }
}

await main()
