import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'

const APP_DIR = fileURLToPath(new URL('../../examples/smart-app/', import.meta.url))

/**
 * What the sample app serves, by path: its own pages and scripts, and SMART's fhirclient library
 * (its published browser build, from the npm package) as `fhir-client.js`.
 */
const FILES: Record<string, { file: string; type: string }> = {
  '/launch.html': { file: `${APP_DIR}launch.html`, type: 'text/html; charset=utf-8' },
  '/index.html': { file: `${APP_DIR}index.html`, type: 'text/html; charset=utf-8' },
  '/launch.js': { file: `${APP_DIR}launch.js`, type: 'text/javascript; charset=utf-8' },
  '/app.js': { file: `${APP_DIR}app.js`, type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: `${APP_DIR}style.css`, type: 'text/css; charset=utf-8' },
  '/fhir-client.js': {
    file: createRequire(import.meta.url).resolve('fhirclient/build/fhir-client.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
}

export interface SampleApp {
  server: Server
  /** The app's origin, e.g. `http://127.0.0.1:9090`. */
  origin: string
}

/** Serves the sample SMART app (examples/smart-app) on `host:port`; port 0 takes a free one. */
export async function startSampleApp(host: string, port: number): Promise<SampleApp> {
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://app').pathname
    const served = FILES[path === '/' ? '/launch.html' : path]
    if (request.method !== 'GET' || !served) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('Not found')
      return
    }
    readFile(served.file).then(
      (body) =>
        response.writeHead(200, { 'content-type': served.type, 'cache-control': 'no-store' }).end(body),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('Cannot read the file'),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, resolve)
  })
  const address = server.address() as AddressInfo
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return { server, origin: `http://${shown}:${address.port}` }
}
