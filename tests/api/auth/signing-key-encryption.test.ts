import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../../db/connect.js'
import { reencryptSecrets } from '../../../scripts/keys/reencrypt.js'
import { openPrivateKey } from '../../../src/identity/signing-keys.js'
import { SecretBox } from '../../../src/lib/secret-box.js'
import { openSigningKey } from '../../../src/outbox/webhook-secrets.js'
import { buildTestApp, openTestDatabase, TEST_ENCRYPTION_KEY } from '../../helpers/app.js'
import { bearer, newOrganization, patientBody, type TestUser } from '../../helpers/factories.js'
import { type Receiver, startReceiver } from '../../helpers/servers/webhook-receiver.js'
import { createPatientAs, registerWebhook } from '../../helpers/webhooks.js'

const OLD_KEY = TEST_ENCRYPTION_KEY
const NEW_KEY = Buffer.alloc(32, 9).toString('base64')
const WRONG_KEY = Buffer.alloc(32, 3).toString('base64')
const bytes = (key: string) => Buffer.from(key, 'base64')

let receiver: Receiver
beforeAll(async () => {
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver.close()
})

/**
 * Several apps, one after another (as instances or versions would), on one database of the test's
 * own: each app gets the handle without its close, and the test closes it.
 */
async function withDatabase(run: (handle: DatabaseHandle) => Promise<void>) {
  const handle = await openTestDatabase()
  try {
    await run(handle)
  } finally {
    await handle.close()
  }
}

const appOn = (handle: DatabaseHandle, environment: Record<string, string> = {}) =>
  buildTestApp(
    { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', ...environment },
    undefined,
    { database: { ...handle, close: async () => {} } },
  )

const signingKeys = (handle: DatabaseHandle) =>
  handle.db.selectFrom('signing_keys').selectAll().orderBy('kid').execute()
const webhooks = (handle: DatabaseHandle) =>
  handle.db.selectFrom('webhooks').selectAll().orderBy('id').execute()

const me = async (app: Awaited<ReturnType<typeof appOn>>, user: TestUser, token = user.token) =>
  (await app.inject({ url: '/api/auth/me', headers: bearer(token) })).statusCode

describe('signing key at rest', () => {
  it('stores the private key sealed, never as PEM', async () => {
    await withDatabase(async (handle) => {
      const app = await appOn(handle)
      try {
        const user = await (await newOrganization(app)).user('ADMIN')
        expect(await me(app, user)).toBe(200)
        const rows = await signingKeys(handle)
        expect(rows.length).toBeGreaterThan(0)
        for (const row of rows) {
          expect(row.private_key).toBeNull()
          expect(JSON.stringify(row)).not.toContain('PRIVATE KEY')
          expect(openPrivateKey(app.secretBox, row.kid, row.private_key_sealed as string)).toContain(
            'PRIVATE KEY',
          )
        }
      } finally {
        await app.close()
      }
    })
  })

  it('seals a plaintext key left by an older version at the next start, and its tokens keep verifying', async () => {
    await withDatabase(async (handle) => {
      const before = await appOn(handle)
      const user = await (await newOrganization(before)).user('ADMIN')
      const token = user.token
      // What a version before migration 0021 left behind: the key in clear.
      for (const row of await signingKeys(handle)) {
        await handle.db
          .updateTable('signing_keys')
          .set({
            private_key: openPrivateKey(before.secretBox, row.kid, row.private_key_sealed as string),
            private_key_sealed: null,
          })
          .where('kid', '=', row.kid)
          .execute()
      }
      await before.close()

      const after = await appOn(handle)
      try {
        for (const row of await signingKeys(handle)) {
          expect(row.private_key).toBeNull()
          expect(row.private_key_sealed).not.toContain('PRIVATE KEY')
        }
        expect(await me(after, user, token)).toBe(200)
        expect(await me(after, user)).toBe(200)
      } finally {
        await after.close()
      }
    })
  })
})

describe('npm run keys -- reencrypt', () => {
  it('moves every secret to the new key; instances with either key read during the switch, then the new key alone', async () => {
    await withDatabase(async (handle) => {
      const old = await appOn(handle)
      const admin = await (await newOrganization(old)).user('ADMIN')
      const token = admin.token
      const webhook = await registerWebhook(old, admin, {
        url: `http://127.0.0.1:${receiver.port}/hooks/reencrypt`,
        events: ['patient.created'],
      })
      // A rotation leaves the previous secret beside the new one: both columns are sealed.
      const rotated = await old.inject({
        method: 'POST',
        url: `/api/webhooks/${webhook.id}/rotate-secret`,
        headers: bearer(token),
        payload: {},
      })
      expect(rotated.statusCode).toBe(200)
      const secret = rotated.json().data.secret as string
      await old.close()

      const counts = await reencryptSecrets(handle.db, new SecretBox(bytes(NEW_KEY), [bytes(OLD_KEY)]))
      expect(counts.reencrypted).toBeGreaterThanOrEqual(2)

      const newOnly = new SecretBox(bytes(NEW_KEY))
      const oldOnly = new SecretBox(bytes(OLD_KEY))
      for (const row of await signingKeys(handle)) {
        const sealed = row.private_key_sealed as string
        expect(openPrivateKey(newOnly, row.kid, sealed)).toContain('PRIVATE KEY')
        expect(() => openPrivateKey(oldOnly, row.kid, sealed)).toThrow()
      }
      const [stored] = (await webhooks(handle)).filter((row) => row.id === webhook.id)
      for (const sealed of [stored?.secret, stored?.previous_secret]) {
        expect(sealed).toEqual(expect.any(String))
        expect(openSigningKey(newOnly, admin.organizationId, sealed as string).length).toBeGreaterThan(0)
        expect(() => openSigningKey(oldOnly, admin.organizationId, sealed as string)).toThrow()
        // An instance still on the old key with the new one beside it reads both columns.
        const during = new SecretBox(bytes(OLD_KEY), [bytes(NEW_KEY)])
        expect(openSigningKey(during, admin.organizationId, sealed as string)).toEqual(
          openSigningKey(newOnly, admin.organizationId, sealed as string),
        )
      }

      // During the switch: the old key current, the new one readable.
      const switching = await appOn(handle, { ENCRYPTION_KEY: OLD_KEY, ENCRYPTION_KEY_PREVIOUS: NEW_KEY })
      try {
        expect(await me(switching, admin, token)).toBe(200)
        expect(await me(switching, admin)).toBe(200)
      } finally {
        await switching.close()
      }

      // Done: the new key alone signs, verifies and delivers.
      const next = await appOn(handle, { ENCRYPTION_KEY: NEW_KEY })
      try {
        expect(await me(next, admin, token)).toBe(200)
        expect(await me(next, admin)).toBe(200)
        await createPatientAs(next, admin, patientBody())
        expect(await next.outbox.drainOnce()).toBeGreaterThan(0)
        const [request] = receiver.received.filter((each) => each.path === '/hooks/reencrypt')
        expect(request).toBeDefined()
        const headers = request?.headers as Record<string, string>
        expect(() => new Webhook(secret).verify(request?.body as string, headers)).not.toThrow()
      } finally {
        await next.close()
      }

      const signingBefore = await signingKeys(handle)
      const webhooksBefore = await webhooks(handle)
      const again = await reencryptSecrets(handle.db, new SecretBox(bytes(NEW_KEY), [bytes(OLD_KEY)]))
      expect(again.reencrypted).toBe(0)
      expect(again.current).toBe(signingBefore.length + webhooksBefore.length)
      expect(await signingKeys(handle)).toEqual(signingBefore)
      expect(await webhooks(handle)).toEqual(webhooksBefore)
    })
  })

  it('fails clearly with a wrong --from-key and changes no row', async () => {
    await withDatabase(async (handle) => {
      const old = await appOn(handle)
      const admin = await (await newOrganization(old)).user('ADMIN')
      await registerWebhook(old, admin, { url: `http://127.0.0.1:${receiver.port}/hooks/wrong` })
      await old.close()
      const signingBefore = await signingKeys(handle)
      const webhooksBefore = await webhooks(handle)

      await expect(
        reencryptSecrets(handle.db, new SecretBox(bytes(NEW_KEY), [bytes(WRONG_KEY)])),
      ).rejects.toThrow(/opens with neither --from-key nor ENCRYPTION_KEY: check --from-key/)
      expect(await signingKeys(handle)).toEqual(signingBefore)
      expect(await webhooks(handle)).toEqual(webhooksBefore)
    })
  })
})
