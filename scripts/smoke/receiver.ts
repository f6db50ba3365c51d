import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

interface ReceivedCall {
  headers: IncomingHttpHeaders
  body: string
}

/**
 * A webhook receiver on loopback: answers every call 204 and keeps it. Only the service under test
 * is meant to reach it (it must allow http:// and loopback targets).
 */
export async function startWebhookReceiver(host = '127.0.0.1') {
  const calls: ReceivedCall[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      calls.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') })
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/ehr-events`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
