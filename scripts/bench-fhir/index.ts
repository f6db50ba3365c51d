import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'
import type { InjectOptions } from 'fastify'
import Fastify from 'fastify'
import { sql } from 'kysely'
import pg from 'pg'
import { benchApp, benchCaller } from '../lib/bench-app.js'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'

// The FHIR Observation search of one patient with many vital-signs records, against the REST list
// of the same records, in the same run: p50 of pages of 20, interleaved. Target: FHIR ≤ 2 × REST.
// Then writes, each measured against its REST counterpart in the same run, interleaved: a FHIR
// create of a patient against POST /api/patients of the same patient (target ≥ 0.75 × its rate),
// and PUT /api/patients/{id} with the version-keeping trigger on against the same with it off
// (target: keeping versions costs ≤ 10 %). On PostgreSQL, a transaction Bundle of 100 lab-result
// Observations against a bare ceiling: the rows the service writes for them, inserted with pg alone
// in one transaction (target ≥ 0.5 × its rate). Reads, interleaved: the patient's heart rates by
// `Observation?patient&code` against bare ceilings, a Fastify route with none of the service's
// work running the same SQL (the page's statement, and the read's audit record the service commits
// before answering) and answering its rows (target ≥ 0.7 × its rate), and a FHIR Patient
// read against GET /api/patients/{id} (target ≥ 0.8 × its rate).
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

const WRITE_SAMPLES = 300

/** The same patient, as the REST API and FHIR take it (a fresh MRN each time). */
function patientBodies(n: number) {
  const mrn = `BENCH${n}`
  return {
    rest: {
      mrn,
      identification: { firstName: 'Ada', lastName: 'Lovelace', dateOfBirth: '1985-12-10', gender: 'Female' },
      contact: { email: 'ada@example.test', phoneNumber: '+1 555 010 2233' },
    },
    fhir: {
      resourceType: 'Patient',
      identifier: [{ system: 'urn:ehr-service:mrn', value: `F${mrn}` }],
      name: [{ family: 'Lovelace', given: ['Ada'] }],
      gender: 'female',
      birthDate: '1985-12-10',
      telecom: [
        { system: 'email', value: 'ada@example.test' },
        { system: 'phone', value: '+1 555 010 2233' },
      ],
    },
  }
}

type Bench = Awaited<ReturnType<typeof benchApp>>['app']

const BUNDLE_ENTRIES = 100
const BUNDLE_SAMPLES = 20
const COLLECTED_AT = '2024-03-01T08:00:00.000Z'
const RESULTED_AT = '2024-03-01T10:30:00.000Z'

/** The n-th lab result of a Bundle: its data as the service stores it, and the Observation sent. */
function labResult(n: number, patientId: number) {
  const value = 70 + (n % 60)
  const mgPerDl = (amount: number) => ({
    value: amount,
    unit: 'mg/dL',
    system: 'http://unitsofmeasure.org',
    code: 'mg/dL',
  })
  return {
    data: {
      status: 'FINAL',
      testCode: '2345-7',
      testName: 'Glucose',
      value,
      unit: 'mg/dL',
      referenceRange: { low: 70, high: 99, text: null },
      interpretation: value > 99 ? 'HIGH' : 'NORMAL',
      specimenCollectedAt: COLLECTED_AT,
      resultedAt: RESULTED_AT,
    },
    observation: {
      resourceType: 'Observation',
      status: 'final',
      category: [
        {
          coding: [
            { system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'laboratory' },
          ],
        },
      ],
      code: { coding: [{ system: 'http://loinc.org', code: '2345-7' }], text: 'Glucose' },
      subject: { reference: `Patient/${patientId}` },
      effectiveDateTime: COLLECTED_AT,
      issued: RESULTED_AT,
      valueQuantity: mgPerDl(value),
      referenceRange: [{ low: mgPerDl(70), high: mgPerDl(99) }],
    },
  }
}

// What the service writes for each lab result a Bundle creates: its clinical record (version 1;
// versions are kept when a record changes, and clinical records emit no event) and the audit
// record committed with it.
const INSERT_LAB = `insert into clinical_records (organization_id, patient_id, encounter_id, kind, status, code,
  effective_at, data, recorded_by, updated_by, entered_in_error_at, entered_in_error_by, entered_in_error_reason)
  values ($1, $2, null, 'LAB_RESULT', 'FINAL', $3, $4, $5, $6, $6, null, null, null) returning *`
const INSERT_AUDIT = `insert into audit_log (occurred_at, organization_id, user_id, action, resource_type, resource_ids,
  patient_id, outcome, status_code, request_id)
  values (now(), $1, $2, 'CREATE', 'lab-result', array[$3::integer], null, 'SUCCESS', 201, $4)`

/** An organization of its own with a provider (who writes lab results) and a patient. */
async function labPractice(app: Bench) {
  const { organization, headers } = await benchCaller(app, ['PROVIDER'])
  const created = await app.inject({
    method: 'POST',
    url: '/api/patients',
    headers,
    payload: {
      identification: { firstName: 'Lab', lastName: 'Patient', dateOfBirth: '1970-01-01', gender: 'Other' },
    },
  })
  if (created.statusCode !== 201) throw new Error(`${created.statusCode} ${created.body}`)
  const user = await app.db
    .selectFrom('users')
    .select('id')
    .where('organization_id', '=', organization.id)
    .executeTakeFirstOrThrow()
  return {
    organizationId: organization.id,
    userId: user.id,
    patientId: created.json().data.id as number,
    headers,
  }
}

/**
 * The rows of an organization's writes, how many by table, and the clinical records of its first
 * Bundle: what the ceiling must write as the service does.
 */
async function writtenRows(app: Bench, organizationId: number) {
  const records = await app.db
    .selectFrom('clinical_records')
    .select(['kind', 'status', 'code', 'effective_at', 'data', 'version', 'entered_in_error_at'])
    .where('organization_id', '=', organizationId)
    .orderBy('id')
    .limit(BUNDLE_ENTRIES)
    .execute()
  const { rows } = await sql<{ table: string; n: number }>`
    select 'clinical_records' as "table", count(*)::int as n from clinical_records where organization_id = ${organizationId}
    union all select 'record_history', count(*)::int from record_history where organization_id = ${organizationId}
    union all select 'outbox_events', count(*)::int from outbox_events where organization_id = ${organizationId}
    union all select 'audit_log ' || action || ' ' || resource_type || ' ' || status_code, count(*)::int
      from audit_log where organization_id = ${organizationId} group by action, resource_type, status_code
    order by 1`.execute(app.db)
  return { records, rows }
}

/**
 * Mean times of a transaction Bundle of lab results posted to /fhir/R4 and of the bare ceiling
 * writing the same rows with pg alone in one transaction, interleaved; each in an organization of its
 * own, whose rows are compared afterwards.
 */
async function bundleRatio(app: Bench, url: string) {
  const fhir = await labPractice(app)
  const bare = await labPractice(app)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const bundle = {
    resourceType: 'Bundle',
    type: 'transaction',
    entry: Array.from({ length: BUNDLE_ENTRIES }, (_, n) => ({
      resource: labResult(n, fhir.patientId).observation,
      request: { method: 'POST', url: 'Observation' },
    })),
  }
  const headers = { ...fhir.headers, 'content-type': 'application/fhir+json', prefer: 'return=minimal' }
  const posted = async () => {
    const started = process.hrtime.bigint()
    const response = await app.inject({ method: 'POST', url: '/fhir/R4', headers, payload: bundle })
    if (response.statusCode !== 200) throw new Error(`${response.statusCode} ${response.body}`)
    return Number(process.hrtime.bigint() - started) / 1e6
  }
  const inserted = async () => {
    const started = process.hrtime.bigint()
    const requestId = randomUUID()
    await client.query('begin')
    try {
      for (let n = 0; n < BUNDLE_ENTRIES; n++) {
        const { data } = labResult(n, bare.patientId)
        const values = [
          bare.organizationId,
          bare.patientId,
          data.testCode,
          data.resultedAt,
          data,
          bare.userId,
        ]
        const { rows } = await client.query({ name: 'bench_insert_lab', text: INSERT_LAB, values })
        await client.query({
          name: 'bench_audit_lab',
          text: INSERT_AUDIT,
          values: [bare.organizationId, bare.userId, rows[0].id, requestId],
        })
      }
      await client.query('commit')
    } catch (error) {
      await client.query('rollback')
      throw error
    }
    return Number(process.hrtime.bigint() - started) / 1e6
  }
  const times = { fhir: [] as number[], bare: [] as number[] }
  try {
    for (let i = -3; i < BUNDLE_SAMPLES; i++) {
      const [fhirTime, bareTime] = [await posted(), await inserted()]
      if (i >= 0) {
        times.fhir.push(fhirTime)
        times.bare.push(bareTime)
      }
    }
  } finally {
    await client.end()
  }
  const [served, ceiling] = [
    await writtenRows(app, fhir.organizationId),
    await writtenRows(app, bare.organizationId),
  ]
  if (JSON.stringify(served) !== JSON.stringify(ceiling)) {
    throw new Error(
      `The ceiling does not write what the service writes: ${JSON.stringify({ served, ceiling })}`,
    )
  }
  const mean = (list: number[]) => list.reduce((sum, value) => sum + value, 0) / list.length
  return { fhir: mean(times.fhir), bare: mean(times.bare) }
}

/** Mean times of the write pairs, each pair interleaved request by request. */
async function writeRatios(app: Bench, headers: Record<string, string>) {
  const timed = async (request: InjectOptions, expected: number) => {
    const started = process.hrtime.bigint()
    const response = await app.inject(request)
    if (response.statusCode !== expected) throw new Error(`${response.statusCode} ${response.body}`)
    return Number(process.hrtime.bigint() - started) / 1e6
  }
  const fhirHeaders = { ...headers, 'content-type': 'application/fhir+json', prefer: 'return=minimal' }
  const creates = { rest: [] as number[], fhir: [] as number[] }
  for (let i = -20; i < WRITE_SAMPLES; i++) {
    const bodies = patientBodies(i + 20)
    const rest = await timed({ method: 'POST', url: '/api/patients', headers, payload: bodies.rest }, 201)
    const fhir = await timed(
      { method: 'POST', url: '/fhir/R4/Patient', headers: fhirHeaders, payload: bodies.fhir },
      201,
    )
    if (i >= 0) {
      creates.rest.push(rest)
      creates.fhir.push(fhir)
    }
  }
  const created = await app.inject({
    method: 'POST',
    url: '/api/patients',
    headers,
    payload: patientBodies(-1).rest,
  })
  const id = created.json().data.id as number
  const put = (n: number) =>
    timed(
      {
        method: 'PUT',
        url: `/api/patients/${id}`,
        headers,
        payload: {
          ...patientBodies(-1).rest,
          identification: { ...patientBodies(-1).rest.identification, lastName: `L${n}` },
        },
      },
      200,
    )
  const trigger = (on: boolean) =>
    sql`alter table patients ${sql.raw(on ? 'enable' : 'disable')} trigger patients_history`.execute(app.db)
  const puts = { bare: [] as number[], kept: [] as number[] }
  try {
    for (let i = -20; i < WRITE_SAMPLES; i++) {
      await trigger(false)
      const bare = await put(2 * i + 100)
      await trigger(true)
      const kept = await put(2 * i + 101)
      if (i >= 0) {
        puts.bare.push(bare)
        puts.kept.push(kept)
      }
    }
  } finally {
    await trigger(true)
  }
  const mean = (list: number[]) => list.reduce((sum, value) => sum + value, 0) / list.length
  return {
    restCreate: mean(creates.rest),
    fhirCreate: mean(creates.fhir),
    putBare: mean(puts.bare),
    putKept: mean(puts.kept),
  }
}

const HEART_RATE = '8867-4'
const READ_SAMPLES = 300

/**
 * The statement the FHIR search `Observation?patient&code&_count=20` runs for its first page (the
 * organization's vital signs and lab results of live patients, by id): the ceiling runs it alone.
 */
const codePage = (organizationId: number, patientId: number, code: string) =>
  sql<{ id: number }>`select r.* from clinical_records as r
    inner join patients as p on p.id = r.patient_id and p.organization_id = r.organization_id
    where r.organization_id = ${organizationId} and p.deleted_at is null
      and r.kind in ('VITAL_SIGNS', 'VITAL_SIGN', 'LAB_RESULT')
      and r.patient_id = ${patientId} and r.code in (${code})
    order by r.id limit 21`

/** The audit record the service commits for the search before it answers (a LIST of vital signs). */
const searchAudit = (organizationId: number, patientId: number, ids: number[]) =>
  sql`insert into audit_log (occurred_at, organization_id, user_id, action, resource_type, resource_ids,
      patient_id, outcome, status_code, request_id)
    values (now(), ${organizationId}, null, 'LIST', 'vital-signs', ${`{${ids.join(',')}}`}::integer[],
      ${patientId}, 'SUCCESS', 200, ${randomUUID()})`

/** Mean times of the read pairs, each pair interleaved request by request. */
async function readRatios(
  app: Bench,
  headers: Record<string, string>,
  organizationId: number,
  patientId: number,
) {
  const ceiling = Fastify({ logger: false })
  ceiling.get<{ Querystring: { patient: string; code: string; audited?: string } }>(
    '/Observation',
    async (request) => {
      const { patient, code, audited } = request.query
      const { rows } = await codePage(organizationId, Number(patient), code).execute(app.db)
      if (audited) {
        const ids = rows.slice(0, 20).map((row) => row.id)
        await searchAudit(organizationId, Number(patient), ids).execute(app.db)
      }
      return rows
    },
  )
  await ceiling.ready()
  const timed = async (inject: () => Promise<{ statusCode: number; body: string }>) => {
    const started = process.hrtime.bigint()
    const response = await inject()
    if (response.statusCode !== 200) throw new Error(`${response.statusCode} ${response.body}`)
    return Number(process.hrtime.bigint() - started) / 1e6
  }
  const fhirSearch = () =>
    app.inject({
      url: `/fhir/R4/Observation?patient=${patientId}&code=http://loinc.org|${HEART_RATE}&_count=20`,
      headers,
    })
  const bare = () => ceiling.inject({ url: `/Observation?patient=${patientId}&code=${HEART_RATE}` })
  const audited = () =>
    ceiling.inject({ url: `/Observation?patient=${patientId}&code=${HEART_RATE}&audited=1` })
  const first = JSON.parse((await fhirSearch()).body) as { entry?: { resource: { id: string } }[] }
  const ceilingIds = (JSON.parse((await bare()).body) as { id: number }[])
    .slice(0, 20)
    .map((row) => String(row.id))
  if (JSON.stringify(first.entry?.map((entry) => entry.resource.id)) !== JSON.stringify(ceilingIds)) {
    throw new Error('The ceiling does not find what the FHIR search finds')
  }
  const restRead = () => app.inject({ url: `/api/patients/${patientId}`, headers })
  const fhirRead = () => app.inject({ url: `/fhir/R4/Patient/${patientId}`, headers })
  const times = {
    bare: [] as number[],
    audited: [] as number[],
    search: [] as number[],
    rest: [] as number[],
    read: [] as number[],
  }
  for (let i = -20; i < READ_SAMPLES; i++) {
    const ceilingTime = await timed(bare)
    const auditedTime = await timed(audited)
    const searchTime = await timed(fhirSearch)
    const restTime = await timed(restRead)
    const readTime = await timed(fhirRead)
    if (i < 0) continue
    times.bare.push(ceilingTime)
    times.audited.push(auditedTime)
    times.search.push(searchTime)
    times.rest.push(restTime)
    times.read.push(readTime)
  }
  await ceiling.close()
  const mean = (list: number[]) => list.reduce((sum, value) => sum + value, 0) / list.length
  return {
    bare: mean(times.bare),
    audited: mean(times.audited),
    search: mean(times.search),
    rest: mean(times.rest),
    read: mean(times.read),
  }
}

async function main(): Promise<void> {
  const { app, kind, url, close } = await benchApp(serverUrl, 'ehr_bench_fhir')
  try {
    const { organization, headers } = await benchCaller(app, ['NURSE'])
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
    const reads = await readRatios(app, headers, organization.id, patientId)
    const writes = await writeRatios(app, headers)
    const bundles = url ? await bundleRatio(app, url) : undefined
    const full = [
      section,
      '',
      `Reads, the mean of ${READ_SAMPLES} in-process requests each, interleaved (rate = 1 ÷ mean time):`,
      '',
      '| read | mean | ratio of rates | target |',
      '|---|---|---|---|',
      `| bare ceiling A: a Fastify route running the search's page statement, answering its rows | ${reads.bare.toFixed(2)} ms | 1 | |`,
      `| bare ceiling B: the same, and the read's audit record inserted before answering, as the service does | ${reads.audited.toFixed(2)} ms | 1 | |`,
      `| GET /fhir/R4/Observation?patient={id}&code=http://loinc.org\\|${HEART_RATE}&_count=20 | ${reads.search.toFixed(2)} ms | ${(reads.bare / reads.search).toFixed(2)} × A, ${(reads.audited / reads.search).toFixed(2)} × B | ≥ 0.7 × B |`,
      `| GET /api/patients/{id} | ${reads.rest.toFixed(2)} ms | 1 | |`,
      `| GET /fhir/R4/Patient/{id} | ${reads.read.toFixed(2)} ms | ${(reads.rest / reads.read).toFixed(2)} | ≥ 0.8 |`,
      '',
      `Writes, the mean of ${WRITE_SAMPLES} in-process requests each, interleaved (rate = 1 ÷ mean time):`,
      '',
      '| write | mean | ratio of rates | target |',
      '|---|---|---|---|',
      `| POST /api/patients | ${writes.restCreate.toFixed(2)} ms | 1 | |`,
      `| POST /fhir/R4/Patient (the same patient) | ${writes.fhirCreate.toFixed(2)} ms | ${(writes.restCreate / writes.fhirCreate).toFixed(2)} | ≥ 0.75 |`,
      `| PUT /api/patients/{id}, versions not kept (trigger off) | ${writes.putBare.toFixed(2)} ms | 1 | |`,
      `| PUT /api/patients/{id}, versions kept | ${writes.putKept.toFixed(2)} ms | ${(writes.putBare / writes.putKept).toFixed(2)} | ≥ 0.90 |`,
      ...(bundles
        ? [
            `| ${BUNDLE_ENTRIES} lab results, bare: their clinical records and audit records inserted with pg in one transaction | ${bundles.bare.toFixed(2)} ms | 1 | |`,
            `| POST /fhir/R4, a transaction Bundle of the same ${BUNDLE_ENTRIES} lab-result Observations (mean of ${BUNDLE_SAMPLES}) | ${bundles.fhir.toFixed(2)} ms | ${(bundles.bare / bundles.fhir).toFixed(2)} | ≥ 0.5 |`,
          ]
        : []),
    ].join('\n')
    process.stdout.write(`${full}\n`)
    await writeBenchmarkSection(heading, full)
  } finally {
    await close()
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`)
  process.exitCode = 1
})
