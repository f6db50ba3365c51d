import { randomInt } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { createClient } from '../../../src/modules/clients/service.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization } from '../../helpers/factories.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp({ RATE_LIMIT_AUTHENTICATED: '5', RATE_LIMIT_CLIENTS: 'bulk-importer=8' })
})
afterAll(async () => {
  await app.close()
})

/** A client address of its own per test, so the anonymous counters of tests never meet. */
const newAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

describe('anonymous rate limit (per IP)', () => {
  it('counts down in the headers and answers the 101st request with 429 RATE_001 and Retry-After', async () => {
    const remoteAddress = newAddress()
    const started = Math.floor(Date.now() / 1000)
    const remaining: number[] = []
    for (let i = 0; i < 100; i++) {
      const response = await app.inject({ url: '/api/patients', remoteAddress })
      expect(response.statusCode).toBe(401)
      expect(response.headers['x-ratelimit-limit']).toBe('100')
      remaining.push(Number(response.headers['x-ratelimit-remaining']))
      const reset = Number(response.headers['x-ratelimit-reset'])
      expect(reset).toBeGreaterThanOrEqual(started + 3590)
      expect(reset).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600)
    }
    expect(remaining[0]).toBe(99)
    expect(remaining.at(-1)).toBe(0)

    const limited = await app.inject({ url: '/api/patients', remoteAddress })
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({
      success: false,
      message: 'Too many requests',
      error: { code: 'RATE_001' },
    })
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(3500)

    const otherClient = await app.inject({ url: '/api/patients', remoteAddress: newAddress() })
    expect(otherClient.statusCode).toBe(401)
  })

  it('counts a flood of forged tokens against the IP, not against the claimed subject', async () => {
    const remoteAddress = newAddress()
    const victim = await (await newOrganization(app)).user('PROVIDER')
    for (let i = 0; i < 100; i++) {
      await app.inject({
        url: '/api/auth/me',
        remoteAddress,
        headers: { authorization: 'Bearer forged.token.value' },
      })
    }
    const limited = await app.inject({
      url: '/api/auth/me',
      remoteAddress,
      headers: bearer('forged.token.value'),
    })
    expect(limited.statusCode).toBe(429)
    const genuine = await app.inject({ url: '/api/auth/me', remoteAddress, headers: bearer(victim.token) })
    expect(genuine.statusCode).toBe(200)
    expect(genuine.headers['x-ratelimit-remaining']).toBe('4')
  })

  it('never limits the probes, metrics or the explorer', async () => {
    const remoteAddress = newAddress()
    for (let i = 0; i < 110; i++) {
      const response = await app.inject({ url: '/actuator/health/liveness', remoteAddress })
      expect(response.statusCode).toBe(200)
      expect(response.headers['x-ratelimit-limit']).toBeUndefined()
    }
  })
})

describe('authenticated rate limit (per subject)', () => {
  it('allows RATE_LIMIT_AUTHENTICATED requests per subject, whatever the address', async () => {
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    for (let i = 0; i < 5; i++) {
      const response = await app.inject({
        url: '/api/auth/me',
        headers: bearer(user.token),
        remoteAddress: newAddress(),
      })
      expect(response.statusCode).toBe(200)
      expect(response.headers['x-ratelimit-limit']).toBe('5')
    }
    const limited = await app.inject({
      url: '/api/auth/me',
      headers: bearer(user.token),
      remoteAddress: newAddress(),
    })
    expect(limited.statusCode).toBe(429)
    const colleague = await org.user('PROVIDER')
    expect((await app.inject({ url: '/api/auth/me', headers: bearer(colleague.token) })).statusCode).toBe(200)
  })

  it('gives a client named in RATE_LIMIT_CLIENTS its own, higher limit', async () => {
    const org = await newOrganization(app)
    const client = await createClient(app.db, {
      organizationId: org.id,
      clientId: 'bulk-importer',
      name: 'Importer',
      roles: ['PROVIDER'],
    })
    const tokenResponse = await app.inject({
      method: 'POST',
      url: '/realms/ehr/protocol/openid-connect/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: client.secret,
      }).toString(),
      remoteAddress: newAddress(),
    })
    const token = tokenResponse.json().access_token
    const statuses: number[] = []
    for (let i = 0; i < 9; i++) {
      statuses.push((await app.inject({ url: '/api/auth/me', headers: bearer(token) })).statusCode)
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 429])
  })
})

describe('rate limit on the embedded issuer (/realms)', () => {
  it('answers past the limit with 429 slow_down in the OAuth format and Retry-After', async () => {
    const remoteAddress = newAddress()
    const url = '/realms/ehr/.well-known/openid-configuration'
    for (let i = 0; i < 100; i++) {
      expect((await app.inject({ url, remoteAddress })).statusCode).toBe(200)
    }
    const limited = await app.inject({ url, remoteAddress })
    expect(limited.statusCode).toBe(429)
    expect(limited.json()).toMatchObject({ error: 'slow_down' })
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0)
  })
})

describe('when the rate-limit store is unreachable', () => {
  it('lets requests through (counted by the instance) rather than failing them', async () => {
    const isolated = await buildTestApp({ REDIS_URL: 'redis://127.0.0.1:1' })
    try {
      const user = await (await newOrganization(isolated)).user('PROVIDER')
      const response = await isolated.inject({ url: '/api/auth/me', headers: bearer(user.token) })
      expect(response.statusCode).toBe(200)
    } finally {
      await isolated.close()
    }
  })
})

describe('TRUST_PROXY', () => {
  it('counts by X-Forwarded-For only when the proxy is trusted', async () => {
    const remoteAddress = newAddress()
    const forwarded = (address: string) => ({ 'x-forwarded-for': address })
    const untrusted = [] as number[]
    for (let i = 0; i < 101; i++) {
      untrusted.push(
        (await app.inject({ url: '/api/patients', remoteAddress, headers: forwarded(newAddress()) }))
          .statusCode,
      )
    }
    expect(untrusted.at(-1)).toBe(429)

    const behindProxy = await buildTestApp({ TRUST_PROXY: remoteAddress, RATE_LIMIT_ANONYMOUS: '2' })
    try {
      const client = newAddress()
      const statuses: number[] = []
      for (let i = 0; i < 3; i++) {
        statuses.push(
          (await behindProxy.inject({ url: '/api/patients', remoteAddress, headers: forwarded(client) }))
            .statusCode,
        )
      }
      expect(statuses).toEqual([401, 401, 429])
      const another = await behindProxy.inject({
        url: '/api/patients',
        remoteAddress,
        headers: forwarded(newAddress()),
      })
      expect(another.statusCode).toBe(401)
    } finally {
      await behindProxy.close()
    }
  })
})
