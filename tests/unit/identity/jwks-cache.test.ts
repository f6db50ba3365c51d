import { createPublicKey, generateKeyPairSync, type JsonWebKey } from 'node:crypto'
import type { Server } from 'node:http'
import { type AddressInfo, createServer } from 'node:net'
// @ts-expect-error oidc-provider ships no type declarations
import Provider from 'oidc-provider'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTcpProxy } from '../../../scripts/lib/tcp-proxy.js'
import {
  discoverProvider,
  PROVIDER_TIMEOUT_MS,
  providerKeys,
} from '../../../src/identity/external-provider.js'
import { jwksCache } from '../../../src/identity/jwks-cache.js'

// A real OpenID provider (oidc-provider) publishes the keys, behind a proxy that can black-hole it.

function signingKey(kid: string): JsonWebKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }
}
const publicPem = (jwk: JsonWebKey) =>
  createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString()

const keys = { k1: signingKey('k1'), k2: signingKey('k2'), k3: signingKey('k3') }
let proxy: Awaited<ReturnType<typeof startTcpProxy>>
let upstreamPort: number
let server: Server | undefined
let issuer: string
let jwksUri: string

/** (Re)starts the provider on the same address, publishing `published`. */
async function serve(published: JsonWebKey[]) {
  if (server) await new Promise((resolve) => server?.close(resolve))
  const provider = new Provider(issuer, {
    jwks: { keys: published as never },
    clients: [{ client_id: 'ehr-api', client_secret: 'not-used', redirect_uris: ['https://app.example/cb'] }],
  })
  server = provider.listen(upstreamPort) as Server
  await new Promise((resolve) => server?.once('listening', resolve))
}

beforeAll(async () => {
  // A free port for the provider, then a proxy in front of it: the issuer is the proxy's address.
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  upstreamPort = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  proxy = await startTcpProxy('127.0.0.1', upstreamPort)
  issuer = `http://127.0.0.1:${proxy.port}`
  await serve([keys.k1, keys.k2])
  jwksUri = (await discoverProvider(issuer)).jwksUri
})
afterAll(async () => {
  proxy.forward()
  await new Promise((resolve) => server?.close(resolve))
  await proxy.cut()
})

describe('the external provider’s key cache', () => {
  it('drops a key the provider stops publishing at the next read, and picks up a new one at once', async () => {
    const failures: number[] = []
    const resolve = jwksCache({
      fetchKeys: () => providerKeys(jwksUri),
      refreshMs: 300_000,
      maxStaleMs: 3_600_000,
      readsPerMinute: 6,
      timeoutMs: PROVIDER_TIMEOUT_MS,
      onReadFailure: (age) => failures.push(age),
    })
    expect(await resolve({ kid: 'k1', alg: 'RS256' })).toBe(publicPem(keys.k1))
    expect(await resolve({ kid: 'k2', alg: 'RS256' })).toBe(publicPem(keys.k2))

    await serve([keys.k2, keys.k3])
    expect(await resolve({ kid: 'k3', alg: 'RS256' })).toBe(publicPem(keys.k3))
    await expect(resolve({ kid: 'k1', alg: 'RS256' })).rejects.toMatchObject({
      code: 'AUTH_001',
      details: expect.stringMatching(/unknown key/),
    })
    await expect(resolve({ kid: 'k2', alg: 'RS512' })).rejects.toMatchObject({ code: 'AUTH_001' })
    expect(failures).toEqual([])
  })

  it('keeps the last good keys while the provider hangs, up to the limit, and recovers when it answers', async () => {
    await serve([keys.k1, keys.k2])
    let clock = 0
    const failures: number[] = []
    const resolve = jwksCache({
      fetchKeys: () => providerKeys(jwksUri),
      refreshMs: 300_000,
      maxStaleMs: 3_600_000,
      readsPerMinute: 100,
      timeoutMs: PROVIDER_TIMEOUT_MS,
      onReadFailure: (age) => failures.push(age),
      now: () => clock,
    })
    expect(await resolve({ kid: 'k1', alg: 'RS256' })).toBe(publicPem(keys.k1))

    proxy.blackHole()
    // Due for a refresh, still good: answered at once from the kept set, read in the background.
    clock = 600_000
    const started = Date.now()
    expect(await resolve({ kid: 'k1', alg: 'RS256' })).toBe(publicPem(keys.k1))
    expect(Date.now() - started).toBeLessThan(200)
    // A key it has never seen needs a read: refused within the provider timeout, not hung.
    const unknownAt = Date.now()
    await expect(resolve({ kid: 'k9', alg: 'RS256' })).rejects.toMatchObject({
      details: expect.stringMatching(/did not answer/),
    })
    expect(Date.now() - unknownAt).toBeLessThan(PROVIDER_TIMEOUT_MS + 1000)
    await expect.poll(() => failures.length, { timeout: 2 * PROVIDER_TIMEOUT_MS }).toBeGreaterThan(0)
    expect(await resolve({ kid: 'k1', alg: 'RS256' })).toBe(publicPem(keys.k1))

    // Past the limit, the kept keys verify nothing more.
    clock = 3_600_001
    await expect(resolve({ kid: 'k1', alg: 'RS256' })).rejects.toMatchObject({
      details: expect.stringMatching(/did not answer/),
    })

    proxy.forward()
    await serve([keys.k2])
    // A read left hanging in the black hole may still end first; the next read gets through.
    const k2 = () => resolve({ kid: 'k2', alg: 'RS256' }).catch(() => undefined)
    await expect.poll(k2, { timeout: 3 * PROVIDER_TIMEOUT_MS, interval: 100 }).toBe(publicPem(keys.k2))
    await expect(resolve({ kid: 'k1', alg: 'RS256' })).rejects.toMatchObject({
      details: expect.stringMatching(/unknown key/),
    })
  }, 30_000)
})
