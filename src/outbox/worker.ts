import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Unlisten } from '../../db/connect.js'
import type { Database } from '../../db/database.js'
import type { SecretBox } from '../lib/secret-box.js'
import { retryDelaySeconds } from './backoff.js'
import {
  type ClaimedDelivery,
  claimDeliveries,
  recordAttempt,
  releaseAllLeases,
  releaseDeliveries,
} from './deliveries.js'
import { OUTBOX_CHANNEL } from './enqueue.js'
import type { AttemptOutcome, OutboxMetrics } from './metrics.js'
import type { Sender } from './sender.js'
import { signatureHeader } from './signing.js'
import { openSigningKey } from './webhook-secrets.js'

// Small batches: a claim holds row locks only for its own statement, and rows claimed beyond what
// can be sent at once would sit out their lease in memory.
const CLAIM_BATCH = 25
// In-flight attempts get this long to finish at shutdown (within the server's 15 s); the rest are
// cut off and handed back as pending.
const STOP_GRACE_MS = 5000

export interface WorkerOptions {
  db: Kysely<Database>
  listen: (channel: string, onNotify: () => void) => Promise<Unlisten>
  sender: Sender
  secretBox: SecretBox
  metrics: OutboxMetrics
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>
  instanceId: string
  retrySchedule: readonly number[]
  leaseSeconds: number
  pollIntervalMs: number
  concurrency: number
  hostConcurrency: number
  deactivateAfterSeconds: number
  /** Only one process can open an embedded database: any lease found at start is stale. */
  releaseLeasesAtStart: boolean
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return url
  }
}

/**
 * Sends the outbox's deliveries: woken by NOTIFY after each commit that created deliveries, and by
 * a timer for retries and anything a lost notification missed. At most `concurrency` attempts run
 * at once, at most `hostConcurrency` of them to one receiving host.
 */
export class OutboxWorker {
  private readonly inFlight = new Set<Promise<void>>()
  private readonly perHost = new Map<string, { count: number; webhooks: Set<number> }>()
  private readonly shutdown = new AbortController()
  private running = false
  private stopping = false
  private claiming: Promise<unknown> | undefined
  private wakeAgain = false
  private unlisten: Unlisten | undefined
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly options: WorkerOptions) {}

  async start(): Promise<void> {
    if (this.options.releaseLeasesAtStart) await releaseAllLeases(this.options.db)
    this.running = true
    this.unlisten = await this.options.listen(OUTBOX_CHANNEL, () => this.wake())
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs)
    this.timer.unref()
    this.wake()
  }

  /** Stops claiming, lets attempts in flight finish for a while, then hands the rest back. */
  async stop(): Promise<void> {
    this.stopping = true
    clearInterval(this.timer)
    await this.unlisten?.()
    await this.claiming
    const all = Promise.all(this.inFlight)
    let timer: NodeJS.Timeout | undefined
    const late = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), STOP_GRACE_MS)
      }),
    ])
    clearTimeout(timer)
    if (late) {
      this.shutdown.abort()
      await all
    }
    await this.options.sender.close()
  }

  /** Claims and sends everything due now, retries that fall due meanwhile included, and waits. */
  async drainOnce(): Promise<number> {
    let total = 0
    for (;;) {
      await this.claiming
      const started = await this.claimAndStart()
      await Promise.all(this.inFlight)
      if (started === 0) return total
      total += started
    }
  }

  private wake(): void {
    if (!this.running || this.stopping) return
    if (this.claiming) {
      this.wakeAgain = true
      return
    }
    this.claiming = this.claimAndStart()
      .catch((error: unknown) =>
        this.options.log.error({ err: { message: (error as Error).message } }, 'outbox claim failed'),
      )
      .finally(() => {
        this.claiming = undefined
        if (this.wakeAgain) {
          this.wakeAgain = false
          this.wake()
        }
      })
  }

  /** Webhooks whose host has no free slot here: leave their deliveries to later or to others. */
  private saturatedWebhooks(): number[] {
    const ids: number[] = []
    for (const { count, webhooks } of this.perHost.values()) {
      if (count >= this.options.hostConcurrency) ids.push(...webhooks)
    }
    return ids
  }

  private async claimAndStart(): Promise<number> {
    const { db, concurrency, hostConcurrency, leaseSeconds, instanceId } = this.options
    let started = 0
    while (!this.stopping) {
      const limit = Math.min(CLAIM_BATCH, concurrency - this.inFlight.size)
      if (limit <= 0) break
      const claimed = await claimDeliveries(db, {
        limit,
        leaseSeconds,
        instanceId,
        skipWebhookIds: this.saturatedWebhooks(),
      })
      const overflow: number[] = []
      for (const delivery of claimed) {
        const host = hostOf(delivery.url)
        const slot = this.perHost.get(host) ?? { count: 0, webhooks: new Set<number>() }
        slot.webhooks.add(delivery.webhook_id)
        this.perHost.set(host, slot)
        if (slot.count >= hostConcurrency) {
          overflow.push(delivery.id)
        } else {
          this.begin(delivery, host)
          started += 1
        }
      }
      await releaseDeliveries(db, overflow, instanceId)
      if (claimed.length < limit) break
    }
    return started
  }

  private begin(delivery: ClaimedDelivery, host: string): void {
    const slot = this.perHost.get(host) as { count: number; webhooks: Set<number> }
    slot.count += 1
    const attempt: Promise<void> = this.attempt(delivery)
      .catch((error: unknown) =>
        this.options.log.error(
          { deliveryId: delivery.id, err: { message: (error as Error).message } },
          'webhook delivery could not be recorded; it is retried when its lease expires',
        ),
      )
      .finally(() => {
        slot.count -= 1
        if (slot.count === 0) this.perHost.delete(host)
        this.inFlight.delete(attempt)
        this.wake()
      })
    this.inFlight.add(attempt)
  }

  private signingSecrets(delivery: ClaimedDelivery): Buffer[] {
    const { secretBox } = this.options
    const secrets = [openSigningKey(secretBox, delivery.organization_id, delivery.secret)]
    if (delivery.previous_secret) {
      secrets.push(openSigningKey(secretBox, delivery.organization_id, delivery.previous_secret))
    }
    return secrets
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const { db, sender, metrics, instanceId } = this.options
    const { event, timestamp, data } = delivery.payload
    const body = JSON.stringify({ event, timestamp, data })
    const attemptedAt = new Date()
    const unixSeconds = Math.floor(attemptedAt.getTime() / 1000)
    const headers = {
      'webhook-id': delivery.message_id,
      'webhook-timestamp': String(unixSeconds),
      'webhook-signature': signatureHeader(
        this.signingSecrets(delivery),
        delivery.message_id,
        unixSeconds,
        body,
      ),
    }
    const sent = await sender.send(delivery.url, headers, body, this.shutdown.signal)
    if (sent.aborted) {
      await releaseDeliveries(db, [delivery.id], instanceId)
      return
    }
    const retryIn =
      sent.error === null ? undefined : retryDelaySeconds(this.options.retrySchedule, delivery.retry_step)
    const outcome: AttemptOutcome =
      sent.error === null ? 'succeeded' : retryIn === undefined ? 'failed' : 'retrying'
    metrics.attempted(delivery.event_type, outcome, sent.latencyMs / 1000)
    const { deactivated } = await recordAttempt(db, {
      deliveryId: delivery.id,
      webhookId: delivery.webhook_id,
      instanceId,
      attemptedAt,
      statusCode: sent.statusCode,
      error: sent.error,
      latencyMs: sent.latencyMs,
      retryInSeconds: retryIn ?? null,
      deactivateAfterSeconds: this.options.deactivateAfterSeconds,
    })
    if (deactivated) {
      this.options.log.warn(
        { webhookId: delivery.webhook_id },
        'webhook deactivated: every attempt failed for the configured period',
      )
    }
  }
}
