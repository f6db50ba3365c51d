import { randomUUID } from 'node:crypto'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROLES, type Role } from '../../../src/access/roles.js'
import type { App } from '../../../src/app.js'
import { authenticateClient, createClient, rotateClientSecret } from '../../../src/modules/clients/service.js'
import { buildTestApp } from '../../helpers/app.js'
import {
  type ExternalPractice,
  externalPerson,
  startExternalPractice,
} from '../../helpers/external-practice.js'
import { bearer, newOrganization, type TestOrganization, type TestUser } from '../../helpers/factories.js'
import { expectSameAndEmptyPatchChangeNothing } from '../../helpers/no-op-writes.js'

// A tiny overlap, so that a test can see the previous secret expire without a long wait.
// Long enough for two rotations and three sign-ins on a loaded machine; one test waits it out.
const OVERLAP_SECONDS = 4

let app: App

beforeAll(async () => {
  app = await buildTestApp({ CLIENT_SECRET_OVERLAP_SECONDS: String(OVERLAP_SECONDS) })
})
afterAll(async () => {
  await app.close()
})

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH'

const call = (user: TestUser, method: Method, url: string, payload?: object) =>
  app.inject({ method, url, headers: bearer(user.token), ...(payload ? { payload } : {}) })

/** The client_credentials grant at the embedded realm's token endpoint, with HTTP Basic. */
const clientCredentials = (clientId: string, secret: string) =>
  app.inject({
    method: 'POST',
    url: '/realms/ehr/protocol/openid-connect/token',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`,
    },
    payload: new URLSearchParams({ grant_type: 'client_credentials' }).toString(),
  })

interface CreatedClient {
  id: number
  clientId: string
  name: string
  roles: string[]
  active: boolean
  serviceAccountUserId: number
  previousSecretExpiresAt: string | null
  secret: string
}

async function created(admin: TestUser, body: object = { name: 'Billing sync', roles: ['BILLING'] }) {
  const response = await call(admin, 'POST', '/api/clients', body)
  expect(response.statusCode, response.body).toBe(201)
  return response.json().data as CreatedClient
}

async function adminOfNewOrganization(): Promise<{ org: TestOrganization; admin: TestUser }> {
  const org = await newOrganization(app)
  return { org, admin: await org.user('ADMIN') }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('POST /api/clients', () => {
  it('returns 201 with a generated client id and the secret, once; the secret is stored only as a hash', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const response = await call(admin, 'POST', '/api/clients', {
      name: 'Lab Sync (north)',
      roles: ['PROVIDER'],
    })
    expect(response.statusCode).toBe(201)
    const client = response.json().data as CreatedClient
    expect(client).toEqual({
      id: expect.any(Number),
      clientId: expect.stringMatching(/^lab-sync-north-[0-9a-f]{8}$/),
      name: 'Lab Sync (north)',
      roles: ['PROVIDER'],
      active: true,
      serviceAccountUserId: expect.any(Number),
      previousSecretExpiresAt: null,
      hasSecret: true,
      jwksUrl: null,
      keys: [],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    })
    const row = await app.db
      .selectFrom('clients')
      .innerJoin('users', 'users.id', 'clients.user_id')
      .select(['clients.secret_hash', 'users.organization_id', 'users.kind'])
      .where('clients.id', '=', client.id)
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({ organization_id: org.id, kind: 'SERVICE' })
    expect(row.secret_hash).toMatch(/^scrypt\$/)
    expect(row.secret_hash).not.toContain(client.secret)

    const read = await call(admin, 'GET', `/api/clients/${client.id}`)
    expect(read.statusCode).toBe(200)
    expect(read.json().data).toEqual({ ...client, secret: undefined })
    expect(read.body).not.toContain(client.secret)
    expect(read.body).not.toMatch(/scrypt|secret_hash|secretHash/)
  })

  it('gives a client whose client_credentials tokens carry its roles and organization; it is not a user', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const client = await created(admin, { name: 'Scheduler', roles: ['FRONT_DESK'] })
    const granted = await clientCredentials(client.clientId, client.secret)
    expect(granted.statusCode, granted.body).toBe(200)
    expect(decodeJwt(granted.json().access_token)).toMatchObject({
      azp: client.clientId,
      realm_access: { roles: ['FRONT_DESK'] },
      groups: [org.groupPath],
    })
    const users = await call(admin, 'GET', '/api/users')
    expect(users.json().data.content.map((user: { id: number }) => user.id)).toEqual([admin.id])
  })

  it.each([
    ['an unknown field', { name: 'Sync', roles: ['BILLING'], clientId: 'chosen' }],
    ['a secret of its own', { name: 'Sync', roles: ['BILLING'], secret: 'mine' }],
    ['no name', { roles: ['BILLING'] }],
    ['a blank name', { name: ' ', roles: ['BILLING'] }],
    ['an unknown role', { name: 'Sync', roles: ['ROOT'] }],
    ['no role', { name: 'Sync', roles: [] }],
  ])('returns 422 for %s, creating nothing', async (_case, body) => {
    const { admin } = await adminOfNewOrganization()
    const response = await call(admin, 'POST', '/api/clients', body)
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json()).toMatchObject({
      success: false,
      error: { code: expect.stringMatching(/^VAL_00[12]$/) },
    })
    expect((await call(admin, 'GET', '/api/clients')).json().data.totalElements).toBe(0)
  })
})

describe('GET /api/clients', () => {
  it('returns 200 with a page of the organization’s clients only, sorted and filtered', async () => {
    const { admin } = await adminOfNewOrganization()
    const zeta = await created(admin, { name: 'Zeta export', roles: ['BILLING'] })
    const alpha = await created(admin, { name: 'alpha import', roles: ['PROVIDER'] })
    const { admin: otherAdmin } = await adminOfNewOrganization()
    await created(otherAdmin)
    await call(admin, 'POST', `/api/clients/${zeta.id}/deactivate`)

    const ids = async (query: string) => {
      const response = await call(admin, 'GET', `/api/clients${query}`)
      expect(response.statusCode, response.body).toBe(200)
      return response.json().data.content.map((client: { id: number }) => client.id)
    }
    expect(await ids('')).toEqual([alpha.id, zeta.id])
    expect(await ids('?sort=name,desc')).toEqual([zeta.id, alpha.id])
    expect(await ids('?sort=createdAt,desc')).toEqual([alpha.id, zeta.id])
    expect(await ids('?active=false')).toEqual([zeta.id])
    expect(await ids('?active=true')).toEqual([alpha.id])
    const paged = await call(admin, 'GET', '/api/clients?size=1&page=1')
    expect(paged.json().data).toMatchObject({
      content: [{ id: zeta.id }],
      totalElements: 2,
      totalPages: 2,
      first: false,
      last: true,
    })
    const past = await call(admin, 'GET', '/api/clients?size=1&page=5')
    expect(past.json().data).toMatchObject({ content: [], totalElements: 2 })
    expect((await call(admin, 'GET', '/api/clients')).body).not.toContain(zeta.secret)
  })

  it.each([
    ['an unknown parameter', '?q=x'],
    ['a page size of 0', '?size=0'],
    ['an unknown sort field', '?sort=secret,asc'],
  ])('returns 400 for %s', async (_case, query) => {
    const { admin } = await adminOfNewOrganization()
    const response = await call(admin, 'GET', `/api/clients${query}`)
    expect(response.statusCode).toBe(400)
    expect(response.json().success).toBe(false)
  })
})

describe('GET /api/clients/{id}', () => {
  it('returns 403 AUTH_003 for another organization’s client and 404 RES_001 for none', async () => {
    const { admin } = await adminOfNewOrganization()
    const { admin: otherAdmin } = await adminOfNewOrganization()
    const theirs = await created(otherAdmin)
    const foreign = await call(admin, 'GET', `/api/clients/${theirs.id}`)
    expect(foreign.statusCode).toBe(403)
    expect(foreign.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
    expect(foreign.body).not.toContain(theirs.clientId)
    const missing = await call(admin, 'GET', '/api/clients/2000000000')
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({ success: false, error: { code: 'RES_001' } })
  })
})

describe('PUT and PATCH /api/clients/{id}', () => {
  it('returns 200 with the client as it was, updatedAt included, for the same values or an empty patch', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const client = await created(admin)
    const url = `/api/clients/${client.id}`
    const read = () => call(admin, 'GET', url)
    const same = { name: 'Billing sync', roles: ['BILLING'] }
    await expectSameAndEmptyPatchChangeNothing(app, org.id, admin, url, same)
    const before = (await read()).json().data.updatedAt
    const changed = await call(admin, 'PUT', url, { ...same, name: 'Billing export' })
    expect(changed.statusCode, changed.body).toBe(200)
    expect(changed.json().data.updatedAt > before).toBe(true)
  })

  it('PUT returns 200 and replaces name and roles, which the next token carries', async () => {
    const { admin } = await adminOfNewOrganization()
    const client = await created(admin)
    const response = await call(admin, 'PUT', `/api/clients/${client.id}`, {
      name: 'Billing and scheduling sync',
      roles: ['BILLING', 'FRONT_DESK'],
    })
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({
      id: client.id,
      clientId: client.clientId,
      name: 'Billing and scheduling sync',
      roles: ['BILLING', 'FRONT_DESK'],
    })
    expect(response.json().data.secret).toBeUndefined()
    const granted = await clientCredentials(client.clientId, client.secret)
    expect(decodeJwt(granted.json().access_token)).toMatchObject({
      realm_access: { roles: ['BILLING', 'FRONT_DESK'] },
    })
  })

  it('PATCH returns 200 and changes only the members sent', async () => {
    const { admin } = await adminOfNewOrganization()
    const client = await created(admin)
    const response = await app.inject({
      method: 'PATCH',
      url: `/api/clients/${client.id}`,
      headers: { ...bearer(admin.token), 'content-type': 'application/merge-patch+json' },
      payload: JSON.stringify({ roles: ['PROVIDER'] }),
    })
    expect(response.statusCode, response.body).toBe(200)
    expect(response.json().data).toMatchObject({ name: 'Billing sync', roles: ['PROVIDER'] })
  })

  it.each([
    ['PATCH', 'the client id', { clientId: 'mine' }],
    ['PATCH', 'the active flag', { active: false }],
    ['PATCH', 'a null name', { name: null }],
    ['PUT', 'no roles', { name: 'Sync' }],
  ] as const)('%s returns 422 for %s, changing nothing', async (method, _case, payload) => {
    const { admin } = await adminOfNewOrganization()
    const client = await created(admin)
    const before = (await call(admin, 'GET', `/api/clients/${client.id}`)).body
    const response = await call(admin, method, `/api/clients/${client.id}`, payload)
    expect(response.statusCode, response.body).toBe(422)
    expect((await call(admin, 'GET', `/api/clients/${client.id}`)).body).toBe(before)
  })
})

describe('POST /api/clients/{id}/rotate-secret', () => {
  it('returns a new secret, once; the previous one works during the overlap and not after it', async () => {
    const { admin } = await adminOfNewOrganization()
    const client = await created(admin)
    const response = await call(admin, 'POST', `/api/clients/${client.id}/rotate-secret`)
    const rotatedAt = Date.now()
    expect(response.statusCode).toBe(200)
    const rotated = response.json().data as CreatedClient
    expect(rotated.secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(rotated.secret).not.toBe(client.secret)
    const expiresAt = Date.parse(rotated.previousSecretExpiresAt ?? '')
    expect(expiresAt).toBeGreaterThan(rotatedAt - 1000)
    expect(expiresAt).toBeLessThanOrEqual(rotatedAt + OVERLAP_SECONDS * 1000)

    expect((await clientCredentials(client.clientId, rotated.secret)).statusCode).toBe(200)
    expect((await clientCredentials(client.clientId, client.secret)).statusCode).toBe(200)

    // The overlap ran from the rotation's transaction, before its response: past it a little after.
    await sleep(Math.max(0, rotatedAt + OVERLAP_SECONDS * 1000 + 100 - Date.now()))
    const expired = await clientCredentials(client.clientId, client.secret)
    expect(expired.statusCode).toBe(401)
    expect(expired.json().error).toBe('invalid_client')
    expect((await clientCredentials(client.clientId, rotated.secret)).statusCode).toBe(200)
    const read = await call(admin, 'GET', `/api/clients/${client.id}`)
    expect(read.json().data.previousSecretExpiresAt).toBeNull()
  })

  it('a second rotation within the overlap retires the oldest secret at once', async () => {
    const { admin } = await adminOfNewOrganization()
    const client = await created(admin)
    const first = (await call(admin, 'POST', `/api/clients/${client.id}/rotate-secret`)).json().data
    const second = (await call(admin, 'POST', `/api/clients/${client.id}/rotate-secret`)).json().data
    expect((await clientCredentials(client.clientId, client.secret)).statusCode).toBe(401)
    expect((await clientCredentials(client.clientId, first.secret)).statusCode).toBe(200)
    expect((await clientCredentials(client.clientId, second.secret)).statusCode).toBe(200)
  })

  it('without an overlap the previous secret stops at once', async () => {
    const { admin } = await adminOfNewOrganization()
    const client = await created(admin)
    const rotated = await rotateClientSecret(
      app.db,
      { userId: admin.id, organizationId: admin.organizationId },
      client.id,
      { external: false, secretOverlapSeconds: 0 },
    )
    expect(rotated.previousSecretExpiresAt).toBeNull()
    expect(await authenticateClient(app.db, client.clientId, client.secret)).toBeUndefined()
    expect(await authenticateClient(app.db, client.clientId, rotated.secret)).toEqual({
      userId: client.serviceAccountUserId,
    })
  })

  it('returns 403 for another organization’s client, leaving its secret working', async () => {
    const { admin } = await adminOfNewOrganization()
    const { admin: otherAdmin } = await adminOfNewOrganization()
    const theirs = await created(otherAdmin)
    const response = await call(admin, 'POST', `/api/clients/${theirs.id}/rotate-secret`)
    expect(response.statusCode).toBe(403)
    expect(response.json().data).toBeUndefined()
    expect((await clientCredentials(theirs.clientId, theirs.secret)).statusCode).toBe(200)
    const read = await call(otherAdmin, 'GET', `/api/clients/${theirs.id}`)
    expect(read.json().data.previousSecretExpiresAt).toBeNull()
  })
})

describe('POST /api/clients/{id}/deactivate and /reactivate', () => {
  it('a deactivated client is refused at the token endpoint and its unused tokens are refused; reactivation restores it', async () => {
    const { admin } = await adminOfNewOrganization()
    const client = await created(admin, { name: 'Sync', roles: ['PROVIDER'] })
    const before = (await clientCredentials(client.clientId, client.secret)).json().access_token as string

    const response = await call(admin, 'POST', `/api/clients/${client.id}/deactivate`)
    expect(response.statusCode).toBe(200)
    expect(response.json().data).toMatchObject({ id: client.id, active: false })
    const refused = await clientCredentials(client.clientId, client.secret)
    expect(refused.statusCode).toBe(401)
    expect(refused.json().error).toBe('invalid_client')
    expect((await app.inject({ url: '/api/patients', headers: bearer(before) })).statusCode).toBe(401)

    const reactivated = await call(admin, 'POST', `/api/clients/${client.id}/reactivate`)
    expect(reactivated.statusCode).toBe(200)
    expect(reactivated.json().data).toMatchObject({ active: true })
    expect((await clientCredentials(client.clientId, client.secret)).statusCode).toBe(200)
  })

  it('returns 403 and 404 for another organization’s client and a missing one, changing nothing', async () => {
    const { admin } = await adminOfNewOrganization()
    const { admin: otherAdmin } = await adminOfNewOrganization()
    const theirs = await created(otherAdmin)
    for (const action of ['deactivate', 'reactivate']) {
      expect((await call(admin, 'POST', `/api/clients/${theirs.id}/${action}`)).statusCode).toBe(403)
      expect((await call(admin, 'POST', `/api/clients/2000000000/${action}`)).statusCode).toBe(404)
    }
    expect((await clientCredentials(theirs.clientId, theirs.secret)).statusCode).toBe(200)
  })
})

describe('who may manage clients', () => {
  const routes: [Method, string, object?][] = [
    ['GET', '/api/clients'],
    ['GET', '/api/clients/{id}'],
    ['POST', '/api/clients', { name: 'Sync', roles: ['ADMIN'] }],
    ['PUT', '/api/clients/{id}', { name: 'Sync', roles: ['ADMIN'] }],
    ['PATCH', '/api/clients/{id}', { roles: ['ADMIN'] }],
    ['POST', '/api/clients/{id}/rotate-secret'],
    ['POST', '/api/clients/{id}/deactivate'],
    ['POST', '/api/clients/{id}/reactivate'],
  ]

  it.each(ROLES.filter((role) => role !== 'ADMIN'))(
    'refuses every clients route to %s with 403 AUTH_003, changing nothing',
    async (role) => {
      const { org, admin } = await adminOfNewOrganization()
      const caller = await org.user(role as Role)
      const client = await created(admin)
      const before = (await call(admin, 'GET', `/api/clients/${client.id}`)).body
      for (const [method, path, payload] of routes) {
        const response = await call(caller, method, path.replace('{id}', String(client.id)), payload)
        expect(response.statusCode, `${method} ${path}`).toBe(403)
        expect(response.json()).toMatchObject({ success: false, error: { code: 'AUTH_003' } })
      }
      expect((await call(admin, 'GET', `/api/clients/${client.id}`)).body).toBe(before)
      expect((await call(admin, 'GET', '/api/clients')).json().data.totalElements).toBe(1)
      expect((await clientCredentials(client.clientId, client.secret)).statusCode).toBe(200)
    },
  )
})

describe('audit trail', () => {
  it('records every clients call with the ids of the clients', async () => {
    const { org, admin } = await adminOfNewOrganization()
    const client = await created(admin)
    await call(admin, 'POST', `/api/clients/${client.id}/rotate-secret`)
    await call(admin, 'GET', '/api/clients')
    await app.auditLog.flush()
    const rows = await app.db
      .selectFrom('audit_log')
      .select(['action', 'outcome', 'resource_ids'])
      .where('organization_id', '=', org.id)
      .where('resource_type', '=', 'client')
      .orderBy('id')
      .execute()
    expect(rows.map((row) => [row.action, row.outcome, row.resource_ids])).toEqual([
      ['CREATE', 'SUCCESS', [client.id]],
      ['UPDATE', 'SUCCESS', [client.id]],
      ['LIST', 'SUCCESS', [client.id]],
    ])
  })
})

describe('with an external identity provider', () => {
  const groupPath = `/practices/${randomUUID()}`
  const boss = externalPerson(groupPath, 'boss', ['ADMIN'])
  let practice: ExternalPractice
  let external: App
  let organizationId: number

  beforeAll(async () => {
    practice = await startExternalPractice(groupPath, [boss])
    external = practice.app
    organizationId = practice.organizationId
  })
  afterAll(async () => {
    await practice?.close()
  })

  it('refuses to register a client or rotate a secret (409 RES_002): the provider’s token endpoint is the one used', async () => {
    const signIn = await external.inject({
      method: 'POST',
      url: '/api/auth/login',
      payload: { username: boss.username, password: boss.password },
    })
    const headers = bearer(signIn.json().data.token)
    const create = await external.inject({
      method: 'POST',
      url: '/api/clients',
      headers,
      payload: { name: 'Sync', roles: ['BILLING'] },
    })
    expect(create.statusCode).toBe(409)
    expect(create.json()).toMatchObject({
      success: false,
      error: { code: 'RES_002', details: expect.stringContaining('external identity provider') },
    })
    // One registered before the provider was configured is listed and can be deactivated, not rotated.
    const earlier = await createClient(external.db, {
      organizationId,
      clientId: `earlier-${randomUUID().slice(0, 8)}`,
      name: 'Earlier sync',
      roles: ['BILLING'],
    })
    const list = await external.inject({ url: '/api/clients', headers })
    expect(list.statusCode).toBe(200)
    expect(list.json().data.content).toMatchObject([{ clientId: earlier.clientId }])
    const id = list.json().data.content[0].id
    const rotate = await external.inject({ method: 'POST', url: `/api/clients/${id}/rotate-secret`, headers })
    expect(rotate.statusCode).toBe(409)
    expect(rotate.json().error.code).toBe('RES_002')
    const deactivate = await external.inject({
      method: 'POST',
      url: `/api/clients/${id}/deactivate`,
      headers,
    })
    expect(deactivate.statusCode).toBe(200)
    expect(deactivate.json().data).toMatchObject({ active: false })
  })
})
