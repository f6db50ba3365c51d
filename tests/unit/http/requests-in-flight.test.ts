import { request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import { requestsInFlight } from '../../../src/http/requests-in-flight.js'

/** An app whose one route waits until the test lets it answer, and the count under test. */
async function appWithGate() {
  const app = Fastify({ logger: false })
  const inFlight = requestsInFlight(app)
  const entered: (() => void)[] = []
  const gates: (() => void)[] = []
  const aborted = new Promise<void>((resolve) =>
    app.addHook('onRequestAbort', (_req, next) => {
      next()
      resolve()
    }),
  )
  app.get('/wait', async () => {
    entered.shift()?.()
    await new Promise<void>((resolve) => gates.push(resolve))
    return { ok: true }
  })
  const nextEntry = () => new Promise<void>((resolve) => entered.push(resolve))
  return { app, inFlight, gates, nextEntry, aborted }
}

const apps: { close(): Promise<unknown> }[] = []
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()))
})

describe('requestsInFlight', () => {
  it('counts a request from its arrival to its response, and requests side by side each once', async () => {
    const { app, inFlight, gates, nextEntry } = await appWithGate()
    apps.push(app)
    expect(inFlight()).toBe(0)
    const entries = [nextEntry(), nextEntry()]
    const answers = [app.inject({ url: '/wait' }), app.inject({ url: '/wait' })]
    await Promise.all(entries)
    expect(inFlight()).toBe(2)
    gates.shift()?.()
    await answers[0]
    expect(inFlight()).toBe(1)
    gates.shift()?.()
    expect((await answers[1])?.statusCode).toBe(200)
    expect(inFlight()).toBe(0)
    expect((await app.inject({ url: '/missing' })).statusCode).toBe(404)
    expect(inFlight()).toBe(0)
  })

  it('lets go of a request the client abandoned, and does not count it again when its handler ends', async () => {
    const { app, inFlight, gates, nextEntry, aborted } = await appWithGate()
    apps.push(app)
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as AddressInfo
    const entry = nextEntry()
    const client = httpRequest({ host: '127.0.0.1', port, path: '/wait' })
    client.on('error', () => {})
    client.end()
    await entry
    expect(inFlight()).toBe(1)
    client.destroy()
    await aborted
    expect(inFlight()).toBe(0)
    gates.shift()?.()
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(inFlight()).toBe(0)
  })
})
