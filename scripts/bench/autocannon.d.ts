// autocannon ships no type declarations; the benchmark uses this much of it.
declare module 'autocannon' {
  interface Histogram {
    average: number
    p50: number
    p99: number
  }
  interface Result {
    requests: Histogram & { total: number }
    latency: Histogram
    non2xx: number
    errors: number
    timeouts: number
    statusCodeStats: Record<string, { count: number }>
  }
  interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string
    setupRequest?: (request: Request) => Request
  }
  interface Options {
    url: string
    connections: number
    duration: number
    headers?: Record<string, string>
    requests?: Request[]
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
