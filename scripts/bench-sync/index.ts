import { parseArgs } from 'node:util'
import { writeBenchmarkSection } from '../lib/benchmarks-file.js'
import { seededBenchApp, seededDatabase } from '../lib/seeded-bench.js'

// Sync paging on a large practice: the p50 of a sync page deep in the walk (page `--depth`) as a
// ratio to the p50 of the first page, measured in the same run on the same database; the offset
// page of the same depth is shown beside it for contrast. Target: deep / first ≤ 1.5.
// `npm run bench:sync -- --patients 1000000`; BENCH_DATABASE_URL names the PostgreSQL server.

const { values } = parseArgs({
  options: {
    patients: { type: 'string', default: '1000000' },
    depth: { type: 'string', default: '10000' },
    samples: { type: 'string', default: '200' },
  },
})
const PATIENTS = Number(values.patients)
const DEPTH = Number(values.depth)
const SAMPLES = Number(values.samples)
const SIZE = 20
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

async function main(): Promise<void> {
  const url = await seededDatabase(adminUrl, `ehr_bench_sync_${PATIENTS}`, PATIENTS)
  const { app, headers } = await seededBenchApp(url)
  try {
    const timed = async (path: string) => {
      const started = process.hrtime.bigint()
      const response = await app.inject({ url: path, headers })
      if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode} ${response.body}`)
      return { ms: Number(process.hrtime.bigint() - started) / 1e6, data: response.json().data }
    }
    const firstPage = `/api/patients?updatedSince=1970-01-01T00:00:00Z&size=${SIZE}`
    process.stdout.write(`Walking to sync page ${DEPTH}…\n`)
    let cursor = (await timed(firstPage)).data.nextCursor as string
    for (let page = 1; page < DEPTH; page++) {
      const { data } = await timed(`/api/patients?cursor=${cursor}&size=${SIZE}`)
      if (data.last) throw new Error(`the list ended at page ${page}; seed more patients or lower --depth`)
      cursor = data.nextCursor
    }
    const deepPage = `/api/patients?cursor=${cursor}&size=${SIZE}`
    const offsetPage = `/api/patients?page=${DEPTH}&size=${SIZE}&sort=updatedAt,asc`
    const samples = { first: [] as number[], deep: [] as number[], offset: [] as number[] }
    // Interleaved, so a burst of load elsewhere on the machine weighs on all three alike.
    for (let i = 0; i < SAMPLES; i++) {
      samples.first.push((await timed(firstPage)).ms)
      samples.deep.push((await timed(deepPage)).ms)
      if (i % 10 === 0) samples.offset.push((await timed(offsetPage)).ms)
    }
    const [first, deep, offset] = [median(samples.first), median(samples.deep), median(samples.offset)]
    const heading = 'Sync paging (npm run bench:sync)'
    const section = [
      `## ${heading}`,
      '',
      `Keyset sync pages of ${SIZE} patients on a practice of ${PATIENTS}: the p50 of page ${DEPTH} of a walk against the p50 of the first page, ${SAMPLES} requests each, interleaved. Target: deep / first ≤ 1.5.`,
      '',
      `\`npm run bench:sync -- --patients ${PATIENTS} --depth ${DEPTH}\` — ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, in-process requests on PostgreSQL at BENCH_DATABASE_URL.`,
      '',
      '| measure | p50 | ratio to the first sync page |',
      '|---|---|---|',
      `| first sync page | ${first.toFixed(2)} ms | 1 |`,
      `| sync page ${DEPTH} | ${deep.toFixed(2)} ms | ${(deep / first).toFixed(2)} |`,
      `| offset page ${DEPTH} (for contrast) | ${offset.toFixed(2)} ms | ${(offset / first).toFixed(1)} |`,
    ].join('\n')
    process.stdout.write(`${section}\n`)
    await writeBenchmarkSection(heading, section)
  } finally {
    await app.close()
  }
}

await main()
