import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface ReceivedRequest {
  path: string
  headers: IncomingHttpHeaders
  body: string
  receivedAt: number
}

export interface Reply {
  status: number
  delayMs?: number
  body?: string
  headers?: Record<string, string>
}

/**
 * A webhook receiver on loopback that records every request. `respond` decides each answer
 * (default 204); tests only ever send to this address.
 */
export async function startReceiver(
  respond: (request: ReceivedRequest, index: number) => Reply = () => ({
    status: 204,
  }),
) {
  const received: ReceivedRequest[] = []
  const waiters: Array<{ count: number; resolve: () => void }> = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const entry = {
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      }
      const reply = respond(entry, received.length)
      received.push(entry)
      for (const waiter of waiters.filter((w) => received.length >= w.count)) waiter.resolve()
      setTimeout(() => {
        response.writeHead(reply.status, reply.headers)
        response.end(reply.body)
      }, reply.delayMs ?? 0)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    /** Distinct `webhook-id`s received so far. */
    messageIds: () => new Set(received.map((entry) => String(entry.headers['webhook-id']))),
    /** Resolves once `count` requests have arrived (or rejects after `timeoutMs`). */
    waitFor(count: number, timeoutMs = 10_000): Promise<void> {
      if (received.length >= count) return Promise.resolve()
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`received ${received.length} of ${count} requests`)),
          timeoutMs,
        )
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer)
            resolve()
          },
        })
      })
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>
