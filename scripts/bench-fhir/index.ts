import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { benchApp, benchCaller } from '../lib/bench-app.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'

// The FHIR Observation search of one patient with many vital-signs records, against the REST list
// of the same records, in the same run: p50 of pages of 20, interleaved. Target: FHIR ≤ 2 × REST.
// `npm run bench:fhir -- --observations 1000`; DATABASE_URL names a PostgreSQL server (the run makes
// a database of its own there and drops it), else in-memory PGlite.

const { values } = parseArgs({
  options: {
    observations: { type: 'string', default: '1000' },
    samples: { type: 'string', default: '200' },
  },
})
const OBSERVATIONS = Math.min(Number(values.observations), 20_000)
const SAMPLES = Number(values.samples)
const serverUrl = process.env.DATABASE_URL
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number

async function main(): Promise<void> {
  const { app, kind, close } = await benchApp(serverUrl, 'ehr_bench_fhir')
  try {
    const { headers } = await benchCaller(app, ['NURSE'])
    const created = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers,
      payload: {
        identification: {
          firstName: 'Bench',
          lastName: 'Patient',
          dateOfBirth: '1970-01-01',
          gender: 'Other',
        },
      },
    })
    const patientId = created.json().data.id as number
    process.stdout.write(`Recording ${OBSERVATIONS} vital-signs records…\n`)
    for (let i = 0; i < OBSERVATIONS; i++) {
      const response = await app.inject({
        method: 'POST',
        url: `/api/patients/${patientId}/vitals`,
        headers,
        payload: { heartRate: 60 + (i % 40), systolic: 110 + (i % 30), diastolic: 70 + (i % 20) },
      })
      if (response.statusCode !== 201)
        throw new Error(`vitals not recorded: ${response.statusCode} ${response.body}`)
    }
    await sql`analyze`.execute(app.db)
    const timed = async (url: string) => {
      const started = process.hrtime.bigint()
      const response = await app.inject({ url, headers })
      if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
      return Number(process.hrtime.bigint() - started) / 1e6
    }
    const rest = `/api/patients/${patientId}/vitals?size=20`
    const fhir = `/fhir/R4/Observation?patient=${patientId}&_count=20`
    const samples = { rest: [] as number[], fhir: [] as number[] }
    for (let i = 0; i < 20; i++) await Promise.all([timed(rest), timed(fhir)])
    for (let i = 0; i < SAMPLES; i++) {
      samples.rest.push(await timed(rest))
      samples.fhir.push(await timed(fhir))
    }
    const [restP50, fhirP50] = [median(samples.rest), median(samples.fhir)]
    const heading = `FHIR Observation search: ${kind}`
    const section = [
      `## ${heading}`,
      '',
      `One patient with ${OBSERVATIONS} vital-signs records; pages of 20, p50 of ${SAMPLES} in-process requests each, interleaved. Target: the FHIR search ≤ 2 × the REST list.`,
      '',
      `\`npm run bench:fhir -- --observations ${OBSERVATIONS}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}.`,
      '',
      '| request | p50 | ratio to the REST list |',
      '|---|---|---|',
      `| GET /api/patients/{id}/vitals?size=20 | ${restP50.toFixed(2)} ms | 1 |`,
      `| GET /fhir/R4/Observation?patient={id}&_count=20 | ${fhirP50.toFixed(2)} ms | ${(fhirP50 / restP50).toFixed(2)} |`,
    ].join('\n')
    process.stdout.write(`${section}\n`)
    await writeBenchmarkSection(heading, section)
  } finally {
    await close()
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`)
  process.exitCode = 1
})
