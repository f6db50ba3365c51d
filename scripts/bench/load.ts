import autocannon from 'autocannon'

/**
 * Drives one scenario with autocannon in its own process (so the load generator's CPU does not
 * count inside the server under test) and prints the result as one JSON line.
 */
export interface LoadPlan {
  url: string
  method: 'GET' | 'POST'
  /** Path, where `{id}` becomes a random integer of `idRange` on each request. */
  path: string
  idRange?: [number, number]
  body?: string
  headers: Record<string, string>
  connections: number
  warmupSeconds: number
  seconds: number
}

const plan = JSON.parse(process.argv[2] as string) as LoadPlan

function request() {
  const [low, high] = plan.idRange ?? [0, 0]
  return {
    method: plan.method,
    headers: { ...plan.headers, ...(plan.body ? { 'content-type': 'application/json' } : {}) },
    ...(plan.body ? { body: plan.body } : {}),
    setupRequest: (current: { path?: string }) => ({
      ...current,
      path: plan.path.replace('{id}', String(low + Math.floor(Math.random() * (high - low + 1)))),
    }),
  }
}

const base = { url: plan.url, connections: plan.connections, requests: [request()] }
const warmup = await autocannon({ ...base, duration: plan.warmupSeconds })
const result = await autocannon({ ...base, duration: plan.seconds })
process.stdout.write(
  `${JSON.stringify({
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx + result.errors + result.timeouts,
    total: result.requests.total,
    // With the warm-up's, for figures taken over the whole run (CPU time per request).
    totalWithWarmup: warmup.requests.total + result.requests.total,
    // What the failures were, when there were any.
    ...(result.non2xx + result.errors + result.timeouts > 0
      ? { statuses: result.statusCodeStats, errors: result.errors, timeouts: result.timeouts }
      : {}),
  })}\n`,
)
