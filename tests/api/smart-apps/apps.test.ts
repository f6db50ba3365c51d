import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { AppError } from '../../../src/errors.js'
import {
  authenticateApp,
  findActiveApp,
  recordGrant,
  registerApp,
} from '../../../src/modules/smart-apps/service.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, type TestUser } from '../../helpers/factories.js'
import { callAs, publicAppBody, registeredApp } from './smart-apps.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const call = (user: TestUser, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  callAs(app, user, method, url, payload)

async function newAdmin() {
  const org = await newOrganization(app)
  return { org, admin: await org.user('ADMIN') }
}

/** The app as the token endpoint finds it; fails the test when it does not. */
async function activeApp(clientId: string) {
  const found = await findActiveApp(app.db, clientId)
  if (!found) throw new Error(`${clientId} is not active`)
  return found
}

const count = async (admin: TestUser) =>
  (await call(admin, 'GET', '/api/smart-apps')).json().data.totalElements

describe('POST /api/smart-apps', () => {
  it('returns 201 with a generated client id; a public app has no secret', async () => {
    const { org, admin } = await newAdmin()
    const response = await call(admin, 'POST', '/api/smart-apps', publicAppBody())
    expect(response.statusCode, response.body).toBe(201)
    const created = response.json().data
    expect(created).toEqual({
      id: expect.any(Number),
      clientId: expect.stringMatching(/^app-[0-9a-f]{32}$/),
      name: 'Growth charts',
      type: 'public',
      redirectUris: ['https://charts.example.com/callback'],
      scopes: publicAppBody().scopes,
      launchUrl: 'https://charts.example.com/launch',
      hasSecret: false,
      jwksUrl: null,
      keys: [],
      active: true,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    })
    const row = await app.db
      .selectFrom('smart_apps')
      .selectAll()
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({ organization_id: org.id, created_by: admin.id, secret_hash: null })
  })

  it('gives a confidential app a secret shown once and stored only as a scrypt hash', async () => {
    const { admin } = await newAdmin()
    const created = await registeredApp(app, admin, publicAppBody({ type: 'confidential' }))
    expect(created).toMatchObject({ type: 'confidential', hasSecret: true })
    const secret = created.clientSecret as string
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const row = await app.db
      .selectFrom('smart_apps')
      .select('secret_hash')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow()
    expect(row.secret_hash).toMatch(/^scrypt\$/)
    expect(row.secret_hash).not.toContain(secret)

    const read = await call(admin, 'GET', `/api/smart-apps/${created.id}`)
    expect(read.statusCode).toBe(200)
    expect(read.json().data).toEqual({ ...created, clientSecret: undefined })
    expect(read.body).not.toContain(secret)
    expect(read.body).not.toMatch(/scrypt|secret_hash|clientSecret/)
    expect((await call(admin, 'GET', '/api/smart-apps')).body).not.toContain(secret)

    const found = await activeApp(created.clientId)
    expect(found.id).toBe(created.id)
    expect(await authenticateApp(app.db, found, { secret })).toBe(true)
    expect(await authenticateApp(app.db, found, { secret: `${secret}x` })).toBe(false)
    expect(await authenticateApp(app.db, found, {})).toBe(false)
  })

  it('registers a confidential app with public keys and no secret', async () => {
    const { admin } = await newAdmin()
    const { publicKey } = await import('node:crypto').then((crypto) =>
      crypto.generateKeyPairSync('ec', { namedCurve: 'P-384' }),
    )
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES384' }
    const created = await registeredApp(
      app,
      admin,
      publicAppBody({ type: 'confidential', jwks: { keys: [jwk] } }),
    )
    expect(created).toMatchObject({ hasSecret: false, keys: [{ kid: 'k1', alg: 'ES384' }] })
    expect(created.clientSecret).toBeUndefined()
  })

  it.each([
    ['http on a public host', ['http://charts.example.com/callback'], 'redirectUris.0'],
    ['a fragment', ['https://charts.example.com/callback#done'], 'redirectUris.0'],
    ['an empty fragment', ['https://charts.example.com/callback#'], 'redirectUris.0'],
    ['user info', ['https://me:pw@charts.example.com/callback'], 'redirectUris.0'],
    ['a custom scheme', ['com.example.charts:/callback'], 'redirectUris.0'],
    ['http on a private address', ['https://ok.example.com/cb', 'http://10.0.0.5/cb'], 'redirectUris.1'],
  ])('returns 422 for a redirect URI with %s, naming it', async (_case, redirectUris, path) => {
    const { admin } = await newAdmin()
    const response = await call(admin, 'POST', '/api/smart-apps', publicAppBody({ redirectUris }))
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'VAL_001' } })
    expect(response.json().error.fields).toEqual([{ path, message: expect.any(String) }])
    expect(await count(admin)).toBe(0)
  })

  it('returns 422 for a relative redirect URI or launch URL', async () => {
    const { admin } = await newAdmin()
    for (const body of [
      publicAppBody({ redirectUris: ['/callback'] }),
      publicAppBody({ launchUrl: 'launch' }),
    ]) {
      const response = await call(admin, 'POST', '/api/smart-apps', body)
      expect(response.statusCode, response.body).toBe(422)
      expect(response.json().success).toBe(false)
    }
    const launch = await call(
      admin,
      'POST',
      '/api/smart-apps',
      publicAppBody({ launchUrl: 'http://example.com/l' }),
    )
    expect(launch.statusCode).toBe(422)
    expect(launch.json().error.fields).toEqual([
      { path: 'launchUrl', message: expect.stringMatching(/https/) },
    ])
    expect(await count(admin)).toBe(0)
  })

  it('accepts http redirect URIs on loopback hosts (RFC 8252)', async () => {
    const { admin } = await newAdmin()
    const redirectUris = ['http://127.0.0.1:8080/cb', 'http://[::1]:8080/cb', 'http://localhost:3000/cb']
    const created = await registeredApp(app, admin, publicAppBody({ redirectUris }))
    expect(created.redirectUris).toEqual(redirectUris)
  })

  it('returns 422 naming each system/, unknown or unserved scope', async () => {
    const { admin } = await newAdmin()
    const scopes = [
      'launch',
      'system/Patient.rs',
      'patient/Patient.rs',
      'admin',
      'patient/Spaceship.rs',
      'user/*.cruds',
    ]
    const response = await call(admin, 'POST', '/api/smart-apps', publicAppBody({ scopes }))
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json().error.fields).toEqual([
      { path: 'scopes.1', message: expect.stringContaining('system/') },
      { path: 'scopes.3', message: expect.stringContaining('admin') },
      { path: 'scopes.4', message: expect.stringContaining('Spaceship') },
    ])
    expect(await count(admin)).toBe(0)
  })

  it('returns 422 for keys on a public app, an unknown field, a missing type and too many redirect URIs', async () => {
    const { admin } = await newAdmin()
    const bodies = [
      publicAppBody({ jwksUrl: 'https://keys.example.com/jwks.json' }),
      publicAppBody({ clientId: 'chosen' }),
      { ...publicAppBody(), type: undefined },
      publicAppBody({ type: 'native' }),
      publicAppBody({ name: '' }),
      publicAppBody({ redirectUris: [] }),
      publicAppBody({ redirectUris: Array.from({ length: 21 }, (_, i) => `https://a.example.com/${i}`) }),
      publicAppBody({ scopes: [] }),
    ]
    for (const body of bodies) {
      const response = await call(admin, 'POST', '/api/smart-apps', body)
      expect(response.statusCode, JSON.stringify(body)).toBe(422)
      expect(response.json().error.code).toMatch(/^VAL_00[12]$/)
    }
    expect(await count(admin)).toBe(0)
  })

  it('returns 403 to every role but ADMIN', async () => {
    const org = await newOrganization(app)
    for (const role of ['PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING', 'PATIENT', 'USER'] as const) {
      const user = await org.user(role)
      const response = await call(user, 'POST', '/api/smart-apps', publicAppBody())
      expect(response.statusCode, role).toBe(403)
      expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
      expect((await call(user, 'GET', '/api/smart-apps')).statusCode).toBe(403)
    }
  })

  it('is refused with 409 when an external identity provider is configured', async () => {
    const { org, admin } = await newAdmin()
    const refusal = registerApp(
      app.db,
      { userId: admin.id, organizationId: org.id },
      publicAppBody() as never,
      { external: true, resourceTypes: new Set(['Patient']) },
    )
    await expect(refusal).rejects.toBeInstanceOf(AppError)
    await expect(refusal).rejects.toMatchObject({ code: 'RES_002', status: 409 })
    expect(await count(admin)).toBe(0)
  })
})

describe('GET, PATCH /api/smart-apps/{id} and the list', () => {
  it('lists the organization’s apps only, and answers 403 for another organization’s, 404 for none', async () => {
    const { admin } = await newAdmin()
    const { admin: other } = await newAdmin()
    const mine = await registeredApp(app, admin, publicAppBody({ name: 'Alpha' }))
    await registeredApp(app, admin, publicAppBody({ name: 'Beta', type: 'confidential' }))
    const theirs = await registeredApp(app, other)

    const list = await call(admin, 'GET', '/api/smart-apps?sort=name,desc')
    expect(list.statusCode).toBe(200)
    expect(list.json().data).toMatchObject({ totalElements: 2, first: true, last: true })
    expect(list.json().data.content.map((a: { name: string }) => a.name)).toEqual(['Beta', 'Alpha'])

    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { name: 'Taken over' }],
      ['POST', '/rotate-secret', undefined],
      ['POST', '/deactivate', undefined],
      ['POST', '/reactivate', undefined],
    ] as const) {
      const refused = await call(admin, method, `/api/smart-apps/${theirs.id}${suffix}`, body)
      expect(refused.statusCode, `${method} ${suffix}`).toBe(403)
      expect(refused.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
      expect(refused.body).not.toContain(theirs.clientId)
      const missing = await call(admin, method, `/api/smart-apps/2000000000${suffix}`, body)
      expect(missing.statusCode).toBe(404)
    }
    const still = await call(other, 'GET', `/api/smart-apps/${theirs.id}`)
    expect(still.json().data).toMatchObject({ name: 'Growth charts', active: true })
    expect((await call(admin, 'GET', `/api/smart-apps/${mine.id}`)).statusCode).toBe(200)
  })

  it('merges a patch, checks the result like a registration, and removes the launch URL with null', async () => {
    const { admin } = await newAdmin()
    const created = await registeredApp(app, admin)
    const patched = await call(admin, 'PATCH', `/api/smart-apps/${created.id}`, {
      name: 'Charts 2',
      redirectUris: ['https://charts.example.com/cb2'],
      launchUrl: null,
    })
    expect(patched.statusCode, patched.body).toBe(200)
    expect(patched.json().data).toMatchObject({
      name: 'Charts 2',
      redirectUris: ['https://charts.example.com/cb2'],
      scopes: created.scopes,
      launchUrl: null,
      clientId: created.clientId,
    })
    for (const patch of [
      { scopes: ['system/*.read'] },
      { redirectUris: ['http://evil.example/cb'] },
      { type: 'confidential' },
      { jwksUrl: 'https://k.example.com/jwks' },
    ]) {
      const refused = await call(admin, 'PATCH', `/api/smart-apps/${created.id}`, patch)
      expect(refused.statusCode, JSON.stringify(patch)).toBe(422)
    }
    expect((await call(admin, 'GET', `/api/smart-apps/${created.id}`)).json().data.name).toBe('Charts 2')
  })
})

describe('POST /api/smart-apps/{id}/rotate-secret', () => {
  it('replaces a confidential app’s secret (the old one stops working) and refuses a public app with 409', async () => {
    const { admin } = await newAdmin()
    const confidential = await registeredApp(app, admin, publicAppBody({ type: 'confidential' }))
    const rotated = await call(admin, 'POST', `/api/smart-apps/${confidential.id}/rotate-secret`)
    expect(rotated.statusCode, rotated.body).toBe(200)
    const secret = rotated.json().data.clientSecret as string
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(secret).not.toBe(confidential.clientSecret)
    const row = await activeApp(confidential.clientId)
    expect(await authenticateApp(app.db, row, { secret })).toBe(true)
    expect(await authenticateApp(app.db, row, { secret: confidential.clientSecret })).toBe(false)

    const open = await registeredApp(app, admin)
    const refused = await call(admin, 'POST', `/api/smart-apps/${open.id}/rotate-secret`)
    expect(refused.statusCode).toBe(409)
    expect(refused.json()).toMatchObject({ success: false, error: { code: 'RES_002' } })
    const openRow = await activeApp(open.clientId)
    expect(await authenticateApp(app.db, openRow, {})).toBe(true)
    expect(await authenticateApp(app.db, openRow, { secret: 'anything' })).toBe(false)
  })
})

describe('POST /api/smart-apps/{id}/deactivate and reactivate', () => {
  it('deactivates: findActiveApp stops finding it, its grants are revoked and its sessions ended', async () => {
    const { org, admin } = await newAdmin()
    const created = await registeredApp(app, admin, publicAppBody({ type: 'confidential' }))
    const nurse = await org.user('NURSE')
    const other = await registeredApp(app, admin, publicAppBody({ name: 'Other' }))
    const [grant, otherGrant] = await app.db.transaction().execute(async (trx) => [
      await recordGrant(trx, {
        organizationId: org.id,
        userId: nurse.id,
        appId: created.id,
        scopes: ['launch'],
      }),
      await recordGrant(trx, {
        organizationId: org.id,
        userId: nurse.id,
        appId: other.id,
        scopes: ['launch'],
      }),
    ])
    const [grantSession, clientSession, otherSession] = ['grant', 'client', 'other'].map(
      (s) => `${s}-${grant}`,
    ) as [string, string, string]
    await app.db
      .insertInto('sessions')
      .values([
        {
          id: grantSession,
          user_id: nurse.id,
          client_id: created.clientId,
          app_grant_id: grant,
          expires_at: new Date(Date.now() + 3_600_000),
          revoked_at: null,
          revoked_reason: null,
        },
        {
          id: clientSession,
          user_id: nurse.id,
          client_id: created.clientId,
          expires_at: new Date(Date.now() + 3_600_000),
          revoked_at: null,
          revoked_reason: null,
        },
        {
          id: otherSession,
          user_id: nurse.id,
          client_id: other.clientId,
          app_grant_id: otherGrant,
          expires_at: new Date(Date.now() + 3_600_000),
          revoked_at: null,
          revoked_reason: null,
        },
      ])
      .execute()

    const deactivated = await call(admin, 'POST', `/api/smart-apps/${created.id}/deactivate`)
    expect(deactivated.statusCode, deactivated.body).toBe(200)
    expect(deactivated.json().data.active).toBe(false)
    expect(await findActiveApp(app.db, created.clientId)).toBeUndefined()
    const row = await app.db
      .selectFrom('smart_apps')
      .select('disabled_at')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow()
    expect(row.disabled_at).toBeInstanceOf(Date)

    const grants = await app.db
      .selectFrom('app_grants')
      .select(['id', 'revoked_at', 'revoked_by'])
      .where('user_id', '=', nurse.id)
      .orderBy('id')
      .execute()
    expect(grants).toEqual([
      { id: grant, revoked_at: expect.any(Date), revoked_by: admin.id },
      { id: otherGrant, revoked_at: null, revoked_by: null },
    ])
    const sessions = await app.db
      .selectFrom('sessions')
      .select(['id', 'revoked_reason'])
      .where('id', 'in', [grantSession, clientSession, otherSession])
      .orderBy('id')
      .execute()
    expect(Object.fromEntries(sessions.map((s) => [s.id, s.revoked_reason]))).toEqual({
      [grantSession]: 'APP_DEACTIVATED',
      [clientSession]: 'APP_DEACTIVATED',
      [otherSession]: null,
    })
    const standing = await call(admin, 'GET', `/api/app-grants?appId=${created.id}`)
    expect(standing.json().data.totalElements).toBe(0)

    const reactivated = await call(admin, 'POST', `/api/smart-apps/${created.id}/reactivate`)
    expect(reactivated.statusCode).toBe(200)
    expect(reactivated.json().data.active).toBe(true)
    expect((await findActiveApp(app.db, created.clientId))?.id).toBe(created.id)
    // Grants revoked by the deactivation stay revoked.
    expect((await call(admin, 'GET', `/api/app-grants?appId=${created.id}`)).json().data.totalElements).toBe(
      0,
    )
    expect((await call(admin, 'GET', '/api/smart-apps?active=true')).json().data.totalElements).toBe(2)
  })

  it('records creations and changes in the audit trail under smart-app', async () => {
    const { org, admin } = await newAdmin()
    const created = await registeredApp(app, admin)
    await call(admin, 'POST', `/api/smart-apps/${created.id}/deactivate`)
    await expect
      .poll(async () =>
        (
          await app.db
            .selectFrom('audit_log')
            .select(['action', 'resource_type', 'resource_ids', 'outcome'])
            .where('organization_id', '=', org.id)
            .where('resource_type', '=', 'smart-app')
            .orderBy('id')
            .execute()
        ).map((row) => `${row.action} ${row.resource_ids.join(',')} ${row.outcome}`),
      )
      .toEqual([`CREATE ${created.id} SUCCESS`, `UPDATE ${created.id} SUCCESS`])
  })
})
