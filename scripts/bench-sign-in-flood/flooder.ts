import { Agent, request } from 'undici'

// The flood of the sign-in flood benchmark, in a process of its own as attackers are on machines
// of their own: `clients` clients each keep one wrong-password sign-in of `username` in flight at
// `base` until told to stop (a message) or `seconds` have passed, then report what they got.

export interface FloodOrder {
  base: string
  username: string
  clients: number
  /** Whether a client waits out the Retry-After it is given, as HTTP clients should, or retries at once. */
  honoursRetryAfter: boolean
  /** The longest the flood runs, whatever happens to its parent. */
  seconds: number
}

export interface FloodReport {
  /** How many answers of each status; 0 counts requests that got no answer. */
  answers: [status: number, count: number][]
  signInMs: number[]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function flood(order: FloodOrder, stopped: Promise<void>): Promise<FloodReport> {
  const agent = new Agent({ connections: order.clients, headersTimeout: 60_000, bodyTimeout: 60_000 })
  const answers = new Map<number, number>()
  const signInMs: number[] = []
  const until = performance.now() + order.seconds * 1000
  let flooding = true
  void stopped.then(() => {
    flooding = false
  })
  const client = async () => {
    while (flooding && performance.now() < until) {
      const started = performance.now()
      let status = 0
      let retryAfter = 0
      try {
        const response = await request(`${order.base}/api/auth/login`, {
          dispatcher: agent,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: order.username, password: 'a-wrong-password' }),
        })
        await response.body.arrayBuffer()
        status = response.statusCode
        retryAfter = Number(response.headers['retry-after'] ?? 0)
      } catch {
        // Counted as status 0; the next attempt follows.
      }
      signInMs.push(performance.now() - started)
      answers.set(status, (answers.get(status) ?? 0) + 1)
      if (order.honoursRetryAfter && retryAfter > 0) await sleep(Math.min(retryAfter, 10) * 1000)
    }
  }
  await Promise.all(Array.from({ length: order.clients }, client))
  await agent.close()
  return { answers: [...answers.entries()], signInMs }
}

if (process.send) {
  const order = JSON.parse(process.argv[2] as string) as FloodOrder
  const stopped = new Promise<void>((resolve) => {
    process.once('message', () => resolve())
    process.once('disconnect', () => resolve())
  })
  const report = await flood(order, stopped)
  if (process.connected) process.send?.(report, () => process.disconnect())
}
