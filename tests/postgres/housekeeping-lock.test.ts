import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { newOrganization } from '../helpers/factories.js'

// The key the housekeeping job locks, as in src/plugins/housekeeping.ts.
const LOCK_KEY = 0x6568_7268_6f75_7365n

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const expiredTokenOf = async (userId: number) =>
  (
    await app.db
      .insertInto('password_reset_tokens')
      .values({
        user_id: userId,
        token_hash: randomUUID(),
        expires_at: new Date(Date.now() - 86_400_000),
        used_at: null,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id

const stillThere = async (id: number) =>
  (await app.db.selectFrom('password_reset_tokens').select('id').where('id', '=', id).execute()).length

describe('the housekeeping job on PostgreSQL', () => {
  it('skips its run while another instance holds the lock, and purges once it is free', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const expired = await expiredTokenOf(user.id)
    const run = await app.db.connection().execute(async (other) => {
      await sql`select pg_advisory_lock(${LOCK_KEY})`.execute(other)
      try {
        return await app.housekeeping.runOnce()
      } finally {
        await sql`select pg_advisory_unlock(${LOCK_KEY})`.execute(other)
      }
    })
    expect(run.outcome).toBe('skipped')
    expect(await stillThere(expired)).toBe(1)
    const scrape = (await app.inject({ url: '/actuator/prometheus' })).body
    expect(scrape).toMatch(/^ehr_housekeeping_runs_total\{outcome="skipped"\} [1-9]/m)
    expect((await app.housekeeping.runOnce()).outcome).toBe('completed')
    expect(await stillThere(expired)).toBe(0)
  })
})
