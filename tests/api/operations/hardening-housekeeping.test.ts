import { randomUUID } from 'node:crypto'
import { CompiledQuery, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { loadConfig } from '../../../src/config.js'
import { expiredTokenPurges } from '../../../src/plugins/housekeeping.js'
import { buildTestApp } from '../../helpers/app.js'
import { newOrganization, type TestOrganization } from '../../helpers/factories.js'

const DAY_MS = 86_400_000
const ago = (days: number) => new Date(Date.now() - days * DAY_MS)
const later = (days: number) => new Date(Date.now() + days * DAY_MS)

let app: App

beforeAll(async () => {
  app = await buildTestApp({ WEBHOOK_DELIVERY_RETENTION_DAYS: '30', AUDIT_RETENTION_DAYS: '365' })
})
afterAll(async () => {
  await app.close()
})

async function resetToken(userId: number, expiresAt: Date) {
  const row = await app.db
    .insertInto('password_reset_tokens')
    .values({ user_id: userId, token_hash: randomUUID(), expires_at: expiresAt, used_at: null })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

async function session(userId: number, state: { expiresAt: Date; revoked?: boolean }) {
  const id = randomUUID()
  await app.db
    .insertInto('sessions')
    .values({
      id,
      user_id: userId,
      client_id: 'ehr-api',
      expires_at: state.expiresAt,
      revoked_at: state.revoked ? ago(1) : null,
      revoked_reason: state.revoked ? 'LOGOUT' : null,
    })
    .execute()
  return id
}

async function refreshToken(sessionId: string, expiresAt: Date) {
  const row = await app.db
    .insertInto('refresh_tokens')
    .values({ session_id: sessionId, token_hash: randomUUID(), expires_at: expiresAt, rotated_at: ago(2) })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

async function webhookOf(org: TestOrganization) {
  const webhook = await app.db
    .insertInto('webhooks')
    .values({
      organization_id: org.id,
      url: 'https://hooks.example.test/ehr',
      events: ['*'],
      secret: 'sealed',
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      deactivated_at: null,
      deactivation_reason: null,
      created_by: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return webhook.id
}

async function delivery(
  org: TestOrganization,
  webhookId: number,
  status: 'PENDING' | 'SUCCEEDED' | 'FAILED',
  lastChange: Date,
  attempts = 2,
) {
  const event = await app.db
    .insertInto('outbox_events')
    .values({
      organization_id: org.id,
      event_type: 'patient.created',
      payload: JSON.stringify({ event: 'patient.created', timestamp: lastChange.toISOString(), data: {} }),
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  const row = await app.db
    .insertInto('webhook_deliveries')
    .values({
      webhook_id: webhookId,
      organization_id: org.id,
      event_id: event.id,
      event_type: 'patient.created',
      status,
      locked_until: null,
      locked_by: null,
      last_attempt_at: lastChange,
      last_status_code: status === 'SUCCEEDED' ? 204 : 500,
      last_error: null,
      last_latency_ms: 10,
      completed_at: status === 'PENDING' ? null : lastChange,
      created_at: lastChange,
      updated_at: lastChange,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  for (let i = 0; i < attempts; i++) {
    await app.db
      .insertInto('webhook_delivery_attempts')
      .values({
        delivery_id: row.id,
        organization_id: org.id,
        attempted_at: lastChange,
        status_code: 500,
        error: null,
        latency_ms: 10,
        instance_id: 'test',
      })
      .execute()
  }
  return row.id
}

async function auditRecord(organizationId: number | null, occurredAt: Date) {
  const row = await app.db
    .insertInto('audit_log')
    .values({
      occurred_at: occurredAt,
      organization_id: organizationId,
      user_id: null,
      action: 'READ',
      resource_type: 'patient',
      resource_ids: [],
      patient_id: null,
      outcome: 'SUCCESS',
      status_code: 200,
      request_id: randomUUID(),
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return Number(row.id)
}

const remaining = async (
  table: 'password_reset_tokens' | 'refresh_tokens' | 'webhook_deliveries',
  ids: number[],
) =>
  (await app.db.selectFrom(table).select('id').where('id', 'in', ids).execute())
    .map((row) => Number(row.id))
    .sort()
const remainingAudit = async (ids: number[]) =>
  (await app.db.selectFrom('audit_log').select('id').where('id', 'in', ids).execute())
    .map((row) => Number(row.id))
    .sort()

const scrape = async () => (await app.inject({ url: '/actuator/prometheus' })).body
const metric = (text: string, series: string) =>
  Number(
    text
      .split('\n')
      .find((line) => line.startsWith(`${series} `))
      ?.split(' ')[1] ?? Number.NaN,
  )

describe('app.housekeeping.runOnce()', () => {
  it('purges expired reset tokens and refresh tokens of ended sessions, keeping the rest', async () => {
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    const expiredReset = await resetToken(user.id, ago(1))
    const liveReset = await resetToken(user.id, later(1))

    const live = await session(user.id, { expiresAt: later(10) })
    const ended = await session(user.id, { expiresAt: ago(1) })
    const revoked = await session(user.id, { expiresAt: later(10), revoked: true })
    // An exchanged token of a live session is kept: presenting it again must still revoke the session.
    const keptForReuseDetection = await refreshToken(live, ago(1))
    const current = await refreshToken(live, later(1))
    const ofEndedSession = await refreshToken(ended, ago(2))
    const ofRevokedSession = await refreshToken(revoked, ago(1))
    const unexpiredOfRevoked = await refreshToken(revoked, later(1))

    const run = await app.housekeeping.runOnce()
    expect(run.outcome).toBe('completed')
    expect(run.purged.password_reset_tokens).toBeGreaterThanOrEqual(1)
    expect(run.purged.refresh_tokens).toBeGreaterThanOrEqual(2)
    expect(await remaining('password_reset_tokens', [expiredReset, liveReset])).toEqual([liveReset])
    expect(
      await remaining('refresh_tokens', [
        keptForReuseDetection,
        current,
        ofEndedSession,
        ofRevokedSession,
        unexpiredOfRevoked,
      ]),
    ).toEqual([keptForReuseDetection, current, unexpiredOfRevoked].sort())
  })

  it('finds expired tokens through an index on their expiry, not by reading every token', async () => {
    for (const [table, purge] of Object.entries(expiredTokenPurges)) {
      // With sequential scans priced out, the plan shows which index the planner can use; on tables
      // this small it would otherwise read the table whatever indexes exist.
      const plan = await app.db.transaction().execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx)
        const { sql: text, parameters } = purge(trx).compile()
        const plan = await trx.executeQuery(CompiledQuery.raw(`explain ${text}`, [...parameters]))
        return plan.rows.map((row) => Object.values(row as object).join(' ')).join('\n')
      })
      expect(plan, table).toContain(`${table}_expires_idx`)
    }
  })

  it('purges finished deliveries past WEBHOOK_DELIVERY_RETENTION_DAYS with their attempts, never pending ones', async () => {
    const org = await newOrganization(app)
    const webhookId = await webhookOf(org)
    const oldSucceeded = await delivery(org, webhookId, 'SUCCEEDED', ago(31))
    const oldFailed = await delivery(org, webhookId, 'FAILED', ago(40), 3)
    const oldPending = await delivery(org, webhookId, 'PENDING', ago(40))
    const recent = await delivery(org, webhookId, 'SUCCEEDED', ago(29))

    const run = await app.housekeeping.runOnce()
    expect(run.purged.webhook_deliveries).toBeGreaterThanOrEqual(2)
    expect(run.purged.webhook_delivery_attempts).toBeGreaterThanOrEqual(5)
    expect(await remaining('webhook_deliveries', [oldSucceeded, oldFailed, oldPending, recent])).toEqual(
      [oldPending, recent].sort(),
    )
    const attempts = await app.db
      .selectFrom('webhook_delivery_attempts')
      .select('delivery_id')
      .where('delivery_id', 'in', [oldSucceeded, oldFailed])
      .execute()
    expect(attempts).toEqual([])
  })

  it('purges audit records past AUDIT_RETENTION_DAYS, with or without an organization', async () => {
    const org = await newOrganization(app)
    const old = await auditRecord(org.id, ago(366))
    const oldAnonymous = await auditRecord(null, ago(400))
    const kept = await auditRecord(org.id, ago(364))

    const run = await app.housekeeping.runOnce()
    expect(run.purged.audit_log).toBeGreaterThanOrEqual(2)
    expect(await remainingAudit([old, oldAnonymous, kept])).toEqual([kept])
  })

  it('works through a backlog in batches and reports rows per table and the last run in the metrics', async () => {
    const org = await newOrganization(app)
    const user = await org.user('PROVIDER')
    await app.db
      .insertInto('password_reset_tokens')
      .values(
        Array.from({ length: 2500 }, () => ({
          user_id: user.id,
          token_hash: randomUUID(),
          expires_at: ago(1),
          used_at: null,
        })),
      )
      .execute()
    const before = metric(await scrape(), 'ehr_housekeeping_rows_purged_total{table="password_reset_tokens"}')
    const started = Date.now() / 1000

    const run = await app.housekeeping.runOnce()
    expect(run.purged.password_reset_tokens).toBe(2500)
    const left = await app.db
      .selectFrom('password_reset_tokens')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow()
    expect(Number(left.n)).toBe(0)

    const after = await scrape()
    expect(metric(after, 'ehr_housekeeping_rows_purged_total{table="password_reset_tokens"}') - before).toBe(
      2500,
    )
    expect(metric(after, 'ehr_housekeeping_last_run_timestamp_seconds')).toBeGreaterThanOrEqual(
      Math.floor(started),
    )
    expect(metric(after, 'ehr_housekeeping_runs_total{outcome="completed"}')).toBeGreaterThanOrEqual(1)
  })
})

describe('retention 0 keeps forever', () => {
  it('purges no delivery or audit record when both retentions are 0', async () => {
    const keeper = await buildTestApp({ WEBHOOK_DELIVERY_RETENTION_DAYS: '0', AUDIT_RETENTION_DAYS: '0' })
    try {
      const org = await newOrganization(keeper)
      await keeper.db
        .insertInto('audit_log')
        .values({
          occurred_at: ago(10_000),
          organization_id: org.id,
          user_id: null,
          action: 'READ',
          resource_type: 'patient',
          resource_ids: [],
          patient_id: null,
          outcome: 'SUCCESS',
          status_code: 200,
          request_id: randomUUID(),
        })
        .execute()
      const run = await keeper.housekeeping.runOnce()
      expect(run).toMatchObject({ outcome: 'completed', purged: { audit_log: 0, webhook_deliveries: 0 } })
    } finally {
      await keeper.close()
    }
  })
})

describe('retention settings', () => {
  it('default to 30 days for deliveries and 2190 days (6 years) for audit records', () => {
    expect(loadConfig({})).toMatchObject({
      webhooks: { deliveryRetentionDays: 30 },
      audit: { retentionDays: 2190 },
      housekeeping: { worker: true, intervalMs: 60 * 60_000 },
    })
  })

  it('refuse an audit retention under a year other than 0 (forever)', () => {
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '0' }).audit.retentionDays).toBe(0)
    expect(loadConfig({ AUDIT_RETENTION_DAYS: '365' }).audit.retentionDays).toBe(365)
    expect(() => loadConfig({ AUDIT_RETENTION_DAYS: '30' })).toThrow(/AUDIT_RETENTION_DAYS/)
  })
})
