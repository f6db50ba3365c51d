import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { sql } from 'kysely'
import { acrossOrganizations } from '../../db/across-organizations.js'
import type { Config } from '../config.js'
import { PURGED_TABLES, type PurgedTable } from '../lib/service-metrics.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The purge job; on a timer unless HOUSEKEEPING_WORKER=false (`runOnce` works either way). */
    housekeeping: Housekeeping
  }
}

export interface HousekeepingRun {
  /** skipped: another instance held the lock; stopped: the app began closing mid-run. */
  outcome: 'completed' | 'skipped' | 'stopped'
  purged: Record<PurgedTable, number>
}

interface Housekeeping {
  /** One run now (or the one already under way): every table, in bounded batches. */
  runOnce(): Promise<HousekeepingRun>
}

// Rows per statement, and statements per table per run: a backlog (the first run on an old
// database) is worked off over several runs, and no statement holds locks or the embedded
// database's single connection for long.
const BATCH_ROWS = 1000
const MAX_BATCHES_PER_TABLE = 100
const FIRST_RUN_DELAY_MS = 60_000
// Session advisory lock key of this job ("ehrhouse" in ASCII): one instance purges at a time.
const LOCK_KEY = 0x6568_7268_6f75_7365n

import type { Db } from '../../db/database.js'

const olderThanDays = (days: number) => sql<Date>`now() - ${days} * interval '1 day'`
const deleted = (result: { numDeletedRows: bigint }) => Number(result.numDeletedRows)

/**
 * The statements that purge expired tokens, one batch each, found through their expires_at
 * indexes. Reset links expire after 30 minutes; used or not, an expired one is of no further use.
 * An exchanged refresh token is kept while its session could still be refreshed: presenting it
 * again is how a stolen copy is noticed (the session is revoked). Once the token has expired and
 * its session has ended (expired or revoked), it is of no further use.
 */
export const expiredTokenPurges = {
  password_reset_tokens: (db: Db) =>
    db
      .deleteFrom('password_reset_tokens')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('password_reset_tokens')
          .select('id')
          .where('expires_at', '<', sql<Date>`now()`)
          .limit(BATCH_ROWS),
      ),
  refresh_tokens: (db: Db) =>
    db.deleteFrom('refresh_tokens').where('id', 'in', (eb) =>
      eb
        .selectFrom('refresh_tokens')
        .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
        .select('refresh_tokens.id')
        .where('refresh_tokens.expires_at', '<', sql<Date>`now()`)
        .where((w) =>
          w.or([w('sessions.expires_at', '<=', sql<Date>`now()`), w('sessions.revoked_at', 'is not', null)]),
        )
        .limit(BATCH_ROWS),
    ),
}

/**
 * Finished deliveries of one webhook past the retention, with their attempts, one batch in one
 * transaction. Found through the (organization, webhook, updated_at) index; pending deliveries stay
 * whatever their age (a deactivated webhook's continue when it is reactivated). Rows are locked
 * and skipped if busy, so a redelivery requested at the same moment wins.
 */
async function purgeDeliveriesOf(
  db: Db,
  webhook: { id: number; organization_id: number },
  days: number,
): Promise<{ deliveries: number; attempts: number }> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('organization_id', '=', webhook.organization_id)
      .where('webhook_id', '=', webhook.id)
      .where('updated_at', '<', olderThanDays(days))
      .where('status', '<>', 'PENDING')
      .orderBy('updated_at')
      .limit(BATCH_ROWS)
      .forUpdate()
      .skipLocked()
      .execute()
    if (rows.length === 0) return { deliveries: 0, attempts: 0 }
    const ids = rows.map((row) => row.id)
    const attempts = await trx
      .deleteFrom('webhook_delivery_attempts')
      .where('organization_id', '=', webhook.organization_id)
      .where('delivery_id', 'in', ids)
      .executeTakeFirst()
    const deliveries = await trx
      .deleteFrom('webhook_deliveries')
      .where('organization_id', '=', webhook.organization_id)
      .where('id', 'in', ids)
      .executeTakeFirst()
    return { deliveries: deleted(deliveries), attempts: deleted(attempts) }
  })
}

/** Audit records of one organization (or of none) past the retention, by the (organization, time) index. */
async function purgeAuditOf(db: Db, organizationId: number | null, days: number): Promise<number> {
  const result = await db
    .deleteFrom('audit_log')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('audit_log')
        .select('id')
        .where('organization_id', organizationId === null ? 'is' : '=', organizationId)
        .where('occurred_at', '<', olderThanDays(days))
        .limit(BATCH_ROWS),
    )
    // Records of no organization: refusals before anyone was identified.
    .$if(organizationId === null, (query) => query.modifyEnd(acrossOrganizations('housekeeping')))
    .executeTakeFirst()
  return deleted(result)
}

interface Settings {
  deliveryRetentionDays: number
  auditRetentionDays: number
}

/**
 * Every purge, table by table. `record` hears of each batch as it is done (the metrics), and
 * `stopping` ends the run between two batches.
 */
async function purgeAll(
  db: Db,
  settings: Settings,
  record: (table: PurgedTable, rows: number) => void,
  stopping: () => boolean,
): Promise<boolean> {
  const pause = () => new Promise((resolve) => setImmediate(resolve))
  /** Runs `batch` until it deletes less than a full batch, the table's budget is spent, or a stop. */
  const drain = async (budget: { left: number }, batch: () => Promise<number>) => {
    while (budget.left > 0 && !stopping()) {
      budget.left--
      const rows = await batch()
      if (rows < BATCH_ROWS) return
      await pause()
    }
  }
  const simple = async (table: PurgedTable, batch: (db: Db) => Promise<number>) =>
    drain({ left: MAX_BATCHES_PER_TABLE }, async () => {
      const rows = await batch(db)
      record(table, rows)
      return rows
    })

  for (const [table, purge] of Object.entries(expiredTokenPurges)) {
    await simple(table as keyof typeof expiredTokenPurges, async (db) =>
      deleted(await purge(db).executeTakeFirst()),
    )
  }

  if (settings.deliveryRetentionDays > 0) {
    const budget = { left: MAX_BATCHES_PER_TABLE }
    const webhooks = await db
      .selectFrom('webhooks')
      .select(['id', 'organization_id'])
      .orderBy('id')
      .modifyEnd(acrossOrganizations('housekeeping'))
      .execute()
    for (const webhook of webhooks) {
      await drain(budget, async () => {
        const { deliveries, attempts } = await purgeDeliveriesOf(db, webhook, settings.deliveryRetentionDays)
        record('webhook_deliveries', deliveries)
        record('webhook_delivery_attempts', attempts)
        return deliveries
      })
    }
  }

  if (settings.auditRetentionDays > 0) {
    const budget = { left: MAX_BATCHES_PER_TABLE }
    const organizations = await db.selectFrom('organizations').select('id').orderBy('id').execute()
    for (const organizationId of [null, ...organizations.map((row) => row.id)]) {
      await drain(budget, async () => {
        const rows = await purgeAuditOf(db, organizationId, settings.auditRetentionDays)
        record('audit_log', rows)
        return rows
      })
    }
  }
  return !stopping()
}

/**
 * Housekeeping: removes rows that have served their purpose (expired password reset and refresh
 * tokens) or outlived their retention (finished webhook deliveries and their attempts after
 * WEBHOOK_DELIVERY_RETENTION_DAYS, audit records after AUDIT_RETENTION_DAYS), in bounded batches,
 * every HOUSEKEEPING_INTERVAL_MINUTES. On PostgreSQL a session advisory lock, held for the run on
 * a direct connection of its own (DATABASE_DIRECT_URL), lets one instance at a time do it (the
 * others skip that run); the batches themselves go through the pool. A transaction-scoped lock
 * would need the whole run in one transaction (minutes of row locks and an all-or-nothing
 * rollback, which the batches exist to avoid), and a session lock taken through the pool reaches,
 * behind a pooler in transaction mode, whichever server session runs that statement: two instances
 * could both "hold" it, and the unlock could miss it. The embedded database has a single instance
 * and just runs.
 */
const housekeeping: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  const settings: Settings = {
    deliveryRetentionDays: config.webhooks.deliveryRetentionDays,
    auditRetentionDays: config.audit.retentionDays,
  }
  let stopping = false
  let running: Promise<HousekeepingRun> | undefined

  async function run(): Promise<HousekeepingRun> {
    const purged = Object.fromEntries(PURGED_TABLES.map((table) => [table, 0])) as Record<PurgedTable, number>
    const record = (table: PurgedTable, rows: number) => {
      purged[table] += rows
      if (rows > 0) app.serviceMetrics.purged(table, rows)
    }
    const lock = await app.database.sessionLock(LOCK_KEY)
    if (!lock) {
      app.serviceMetrics.housekeepingRun('skipped')
      return { outcome: 'skipped', purged }
    }
    let finished: boolean
    try {
      // Between batches: a lost lock connection means another instance may already have started.
      finished = await purgeAll(app.db, settings, record, () => stopping || !lock.held)
      if (!finished && !stopping) throw new Error('the connection holding the housekeeping lock was lost')
    } finally {
      await lock.release()
    }
    if (finished) app.serviceMetrics.housekeepingRun('completed')
    app.log.info({ purged }, finished ? 'housekeeping run completed' : 'housekeeping run stopped by shutdown')
    return { outcome: finished ? 'completed' : 'stopped', purged }
  }

  const runOnce = () => {
    running ??= run()
      .catch((error: unknown) => {
        app.serviceMetrics.housekeepingRun('failed')
        app.log.error({ err: { message: (error as Error).message } }, 'housekeeping run failed')
        throw error
      })
      .finally(() => {
        running = undefined
      })
    return running
  }
  app.decorate('housekeeping', { runOnce })

  let timer: NodeJS.Timeout | undefined
  const schedule = (delayMs: number) => {
    timer = setTimeout(() => {
      runOnce()
        .catch(() => {
          // Logged and counted above; the next run tries again.
        })
        .finally(() => {
          if (!stopping) schedule(config.housekeeping.intervalMs)
        })
    }, delayMs)
    timer.unref()
  }
  if (config.housekeeping.worker) {
    app.addHook('onReady', async () => schedule(Math.min(FIRST_RUN_DELAY_MS, config.housekeeping.intervalMs)))
  }
  app.addHook('preClose', async () => {
    stopping = true
    clearTimeout(timer)
  })
  // Registered after the database plugin, so it runs before the pool closes.
  app.addHook('onClose', async () => {
    stopping = true
    clearTimeout(timer)
    await running?.catch(() => {})
  })
}

export default fp(housekeeping, { name: 'housekeeping', dependencies: ['database', 'metrics'] })
