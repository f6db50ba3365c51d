import type { FastifyBaseLogger } from 'fastify'
import type { Unlisten } from '../../db/connect.js'
import type { Db } from '../../db/database.js'
import { releaseAllLeases, releaseLeases } from '../../db/leases.js'
import type { SecretBox } from '../lib/secret-box.js'
import { retryDelaySeconds } from './backoff.js'
import { type ClaimedDelivery, claimDeliveries, recordFailure, recordSuccesses } from './deliveries.js'
import type { AttemptOutcome, OutboxMetrics } from './delivery-metrics.js'
import { OUTBOX_CHANNEL } from './doorbell.js'
import type { Sender } from './sender.js'
import { signatureHeader } from './signing.js'
import { SuccessBatch } from './success-batch.js'
import { openSigningKey } from './webhook-secrets.js'

// Small batches: a claim holds row locks only for its own statement. Rows of a host that is
// already at its limit wait in a local queue of at most two batches; claiming for that host pauses
// while a whole batch is queued and resumes below that, so the queue is refilled before it runs
// dry and a busy receiver costs one claim per batch, not one per delivery.
const CLAIM_BATCH = 25
const HOST_QUEUE = 2 * CLAIM_BATCH
// In-flight attempts get this long to finish at shutdown (within the server's 15 s); the rest are
// cut off and their leases released (pending again).
const STOP_GRACE_MS = 5000
// A queued delivery is sent only if its lease outlasts a whole attempt by this much; otherwise it
// is released, so that no other instance can claim it while it is being sent.
const LEASE_MARGIN_MS = 2000

export interface WorkerOptions {
  db: Db
  listen: (channel: string, onNotify: (payload?: string) => void) => Promise<Unlisten>
  sender: Sender
  secretBox: SecretBox
  metrics: OutboxMetrics
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>
  /** This worker's id in the leases it takes (db/leases.ts), and in the attempts it records. */
  leaseOwner: string
  leaseSeconds: number
  retrySchedule: readonly number[]
  pollIntervalMs: number
  concurrency: number
  hostConcurrency: number
  deactivateAfterSeconds: number
  attemptTimeoutMs: number
  /** Only one process can open an embedded database: any lease found at start is stale. */
  releaseLeasesAtStart: boolean
  /** Claim with planner settings that do without statistics (the embedded database has none). */
  pinClaimPlan: boolean
}

const hostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return url
  }
}

interface HostState {
  inFlight: number
  queue: Array<{ delivery: ClaimedDelivery; claimedAt: number }>
  webhooks: Set<number>
}

/**
 * Sends the outbox's deliveries: woken after each commit that created deliveries (`wakeFor`), and by
 * a timer for retries and for what other processes created. At most `concurrency` attempts run
 * at once, at most `hostConcurrency` of them to one receiving host (`host:port` of the URL).
 */
export class OutboxWorker {
  private readonly inFlight = new Set<Promise<void>>()
  private readonly hosts = new Map<string, HostState>()
  private readonly shutdown = new AbortController()
  private running = false
  private stopping = false
  private claiming: Promise<unknown> | undefined
  private wakeAgain = false
  private wakeScheduled = false
  /** Attempts started so far (drainOnce counts with it). */
  private attempts = 0
  private unlisten: Unlisten | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly retryTimers = new Set<NodeJS.Timeout>()
  private readonly successes: SuccessBatch

  constructor(private readonly options: WorkerOptions) {
    this.successes = new SuccessBatch((batch) => recordSuccesses(options.db, options.leaseOwner, batch))
  }

  async start(): Promise<void> {
    if (this.options.releaseLeasesAtStart) await releaseAllLeases(this.options.db, 'webhook_deliveries')
    this.running = true
    this.unlisten = await this.options.listen(OUTBOX_CHANNEL, (payload) =>
      this.wakeFor(payload ? [Number(payload)] : undefined),
    )
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs)
    this.timer.unref()
    this.wake()
  }

  /** Whether it is started and not stopping (a commit may wake it). */
  get isRunning(): boolean {
    return this.running && !this.stopping
  }

  /** Stops claiming, lets attempts in flight finish for a while, then releases the rest. */
  async stop(): Promise<void> {
    this.stopping = true
    clearInterval(this.timer)
    for (const timer of this.retryTimers) clearTimeout(timer)
    await this.unlisten?.()
    await this.claiming
    await this.releaseQueued()
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
      const before = this.attempts
      await this.claimAndStart()
      while (this.inFlight.size > 0) await Promise.all(this.inFlight)
      if (this.attempts === before) return total
      total += this.attempts - before
    }
  }

  /**
   * A commit created deliveries for the webhooks named (none named: anything may be due). Rung
   * by this instance's writers after their commits (src/outbox/doorbell.ts), and by NOTIFY from
   * instances that run no worker.
   */
  wakeFor(webhookIds?: readonly number[]): void {
    // Each receiver has a whole batch queued here: the attempts that shorten the queues claim more.
    if (webhookIds) {
      const busy = this.busyWebhooks()
      if (webhookIds.every((id) => busy.includes(id))) return
    }
    this.wake()
  }

  /**
   * Claims on the next turn of the event loop: the wake-ups of one turn (commits, answers) share a
   * claim, and a request whose commit woke the worker is answered before the claim runs, which on
   * the embedded database shares the process with the API.
   */
  private wake(): void {
    if (!this.running || this.stopping || this.wakeScheduled) return
    this.wakeScheduled = true
    setImmediate(() => {
      this.wakeScheduled = false
      this.claimNow()
    })
  }

  private claimNow(): void {
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
          this.claimNow()
        }
      })
  }

  /** The retry this instance scheduled is due then; the poll covers other instances and restarts. */
  private wakeAfter(seconds: number): void {
    if (!this.running) return
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer)
      this.wake()
    }, seconds * 1000)
    timer.unref()
    this.retryTimers.add(timer)
  }

  /** Webhooks of hosts with a whole batch queued here: claim nothing more for them for now. */
  private busyWebhooks(): number[] {
    const ids: number[] = []
    for (const host of this.hosts.values()) if (host.queue.length >= CLAIM_BATCH) ids.push(...host.webhooks)
    return ids
  }

  private hostState(host: string): HostState {
    let state = this.hosts.get(host)
    if (!state) {
      state = { inFlight: 0, queue: [], webhooks: new Set() }
      this.hosts.set(host, state)
    }
    return state
  }

  private async claimAndStart(): Promise<void> {
    const { db, concurrency, hostConcurrency, leaseOwner, leaseSeconds } = this.options
    while (!this.stopping) {
      const limit = Math.min(CLAIM_BATCH, concurrency - this.inFlight.size)
      if (limit <= 0) return
      const claimed = await claimDeliveries(db, {
        limit,
        leaseOwner,
        leaseSeconds,
        skipWebhookIds: this.busyWebhooks(),
        pinPlan: this.options.pinClaimPlan,
      })
      const claimedAt = Date.now()
      const overflow: number[] = []
      const touched = new Set<HostState>()
      for (const delivery of claimed) {
        const host = hostOf(delivery.url)
        const state = this.hostState(host)
        touched.add(state)
        state.webhooks.add(delivery.webhook_id)
        if (state.inFlight < hostConcurrency) this.begin(delivery, host)
        else if (state.queue.length < HOST_QUEUE) state.queue.push({ delivery, claimedAt })
        else overflow.push(delivery.id)
      }
      await releaseLeases(db, 'webhook_deliveries', leaseOwner, overflow)
      if (claimed.length < limit) return
      // Claiming again now would skip every host this claim filled up and could only find other
      // hosts' work, which the next notification, answer or poll claims as well; under a backlog
      // for one receiver that saves an empty claim per batch.
      if ([...touched].every((state) => state.queue.length >= CLAIM_BATCH)) return
    }
  }

  /** Releases what waits in the local queues (shutdown). */
  private async releaseQueued(): Promise<void> {
    const ids: number[] = []
    for (const state of this.hosts.values())
      ids.push(...state.queue.splice(0).map(({ delivery }) => delivery.id))
    await releaseLeases(this.options.db, 'webhook_deliveries', this.options.leaseOwner, ids)
  }

  private begin(delivery: ClaimedDelivery, host: string): void {
    const state = this.hostState(host)
    state.inFlight += 1
    this.attempts += 1
    let slotHeld = true
    // The host's slot is freed as soon as its answer is in; recording the outcome needs no slot.
    const freeSlot = () => {
      if (!slotHeld) return
      slotHeld = false
      state.inFlight -= 1
      this.next(host, state)
    }
    const attempt: Promise<void> = this.attempt(delivery, freeSlot)
      .catch((error: unknown) =>
        this.options.log.error(
          { deliveryId: delivery.id, err: { message: (error as Error).message } },
          'webhook delivery could not be recorded; it is retried when its lease expires',
        ),
      )
      .finally(() => {
        const wasFull = this.inFlight.size >= this.options.concurrency
        this.inFlight.delete(attempt)
        freeSlot()
        // A host with a full batch queued keeps itself busy; claiming again only helps when a slot
        // opened up for other hosts or this one's queue needs topping up.
        if (wasFull || (this.hosts.get(host)?.queue.length ?? 0) < CLAIM_BATCH) this.wake()
      })
    this.inFlight.add(attempt)
  }

  /** A slot of `host` is free: the next queued delivery goes, or, with none left, claiming resumes. */
  private next(host: string, state: HostState): void {
    const { leaseOwner, leaseSeconds, attemptTimeoutMs, db } = this.options
    const queued = this.stopping ? undefined : state.queue.shift()
    if (queued) {
      const leaseLeft = queued.claimedAt + leaseSeconds * 1000 - Date.now()
      if (leaseLeft > attemptTimeoutMs + LEASE_MARGIN_MS) {
        this.begin(queued.delivery, host)
      } else {
        releaseLeases(db, 'webhook_deliveries', leaseOwner, [queued.delivery.id]).catch(() => {})
        this.next(host, state)
      }
      return
    }
    if (state.inFlight === 0 && state.queue.length === 0) this.hosts.delete(host)
  }

  private signingSecrets(delivery: ClaimedDelivery): Buffer[] {
    const { secretBox } = this.options
    const secrets = [openSigningKey(secretBox, delivery.organization_id, delivery.secret)]
    if (delivery.previous_secret) {
      secrets.push(openSigningKey(secretBox, delivery.organization_id, delivery.previous_secret))
    }
    return secrets
  }

  private async attempt(delivery: ClaimedDelivery, answered: () => void): Promise<void> {
    const { db, sender, metrics, leaseOwner } = this.options
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
    answered()
    if (sent.aborted) {
      await releaseLeases(db, 'webhook_deliveries', leaseOwner, [delivery.id])
      return
    }
    const retryIn =
      sent.error === null ? undefined : retryDelaySeconds(this.options.retrySchedule, delivery.retry_step)
    const outcome: AttemptOutcome =
      sent.error === null ? 'succeeded' : retryIn === undefined ? 'failed' : 'retrying'
    metrics.attempted(delivery.event_type, outcome, sent.latencyMs / 1000)
    if (sent.error === null) {
      await this.successes.add({
        deliveryId: delivery.id,
        webhookId: delivery.webhook_id,
        attemptedAt,
        statusCode: sent.statusCode,
        latencyMs: sent.latencyMs,
      })
      return
    }
    const { deactivated } = await recordFailure(db, {
      deliveryId: delivery.id,
      webhookId: delivery.webhook_id,
      leaseOwner,
      attemptedAt,
      statusCode: sent.statusCode,
      error: sent.error,
      latencyMs: sent.latencyMs,
      retryInSeconds: retryIn ?? null,
      deactivateAfterSeconds: this.options.deactivateAfterSeconds,
    })
    if (retryIn !== undefined) this.wakeAfter(retryIn)
    if (deactivated) {
      this.options.log.warn(
        { webhookId: delivery.webhook_id },
        'webhook deactivated: every attempt failed for the configured period',
      )
    }
  }
}
