import { type Static, Type } from '@sinclair/typebox'

export const WebhookEnv = Type.Object(
  {
    OUTBOX_WORKER: Type.Boolean({
      default: true,
      description:
        'Run the webhook delivery worker in this instance (`false`: leave delivery to other instances)',
    }),
    OUTBOX_POLL_INTERVAL_MS: Type.Integer({
      minimum: 50,
      maximum: 600_000,
      default: 1000,
      description:
        "How often the worker looks for due deliveries besides being woken by this instance's commits, by NOTIFY from instances that run no worker (`OUTBOX_WORKER=false`) and by its own retry timers",
    }),
    WEBHOOK_ALLOW_HTTP: Type.Boolean({
      default: false,
      description: 'Accept `http://` webhook URLs. **Development and tests only**: events travel unencrypted',
    }),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Boolean({
      default: false,
      description:
        'Accept hosts on loopback, private, link-local, unique-local or metadata addresses. **Development and tests only** (SSRF)',
    }),
    WEBHOOK_RETRY_SCHEDULE: Type.String({
      pattern: '^\\d+(\\.\\d+)?(,\\d+(\\.\\d+)?)*$',
      default: '5,300,1800,7200,18000,36000,36000',
      description:
        'Seconds before each retry of a failed delivery (±20% jitter); after the last the delivery is FAILED',
    }),
    WEBHOOK_CONNECT_TIMEOUT_MS: Type.Integer({
      minimum: 100,
      maximum: 60_000,
      default: 5000,
      description: 'Time to connect to a receiver',
    }),
    WEBHOOK_TIMEOUT_MS: Type.Integer({
      minimum: 100,
      maximum: 120_000,
      default: 10_000,
      description: 'Time for a whole attempt (connect, send, answer)',
    }),
    WEBHOOK_LEASE_SECONDS: Type.Number({
      minimum: 1,
      maximum: 3600,
      default: 60,
      description:
        'The lease an instance takes on each delivery it claims: no other instance claims the delivery until the lease lapses, so after a crash it is pending again after this. Must exceed `WEBHOOK_TIMEOUT_MS`',
    }),
    WEBHOOK_CONCURRENCY: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 64,
      description: 'Attempts one instance runs at once, in all',
    }),
    WEBHOOK_HOST_CONCURRENCY: Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 8,
      description:
        'Attempts one instance runs at once to one receiving `host:port`, so a slow receiver cannot take every slot',
    }),
    WEBHOOK_DEACTIVATE_AFTER_SECONDS: Type.Integer({
      minimum: 1,
      default: 5 * 86_400,
      description: 'A webhook whose attempts have all failed this long (5 days) is deactivated',
    }),
    WEBHOOK_SECRET_OVERLAP_SECONDS: Type.Integer({
      minimum: 0,
      maximum: 30 * 86_400,
      default: 86_400,
      description: 'After a secret rotation the previous secret also signs this long',
    }),
    WEBHOOK_DELIVERY_RETENTION_DAYS: Type.Integer({
      minimum: 0,
      maximum: 36_500,
      default: 30,
      description:
        'Finished webhook deliveries (succeeded or failed) and their recorded attempts are purged this many days after their last change; `0` keeps them forever. Pending deliveries are never purged',
    }),
  },
  { title: 'Webhooks and the outbox worker' },
)

type Env = Static<typeof WebhookEnv>

export interface WebhookSettings {
  /** Deliver in this instance (OUTBOX_WORKER). */
  worker: boolean
  pollIntervalMs: number
  allowHttp: boolean
  allowPrivateTargets: boolean
  /** WEBHOOK_RETRY_SCHEDULE: the delay before each retry after a failed attempt, in seconds. */
  retrySeconds: readonly number[]
  connectTimeoutMs: number
  timeoutMs: number
  leaseSeconds: number
  concurrency: number
  hostConcurrency: number
  deactivateAfterSeconds: number
  secretOverlapSeconds: number
  deliveryRetentionDays: number
}

/** Read beside values that may be invalid: a comparison with one that is not a number does not hold. */
export function webhookProblems(env: Env): string[] {
  // A lease shorter than an attempt would let a second instance claim a delivery still in flight.
  return env.WEBHOOK_LEASE_SECONDS * 1000 <= env.WEBHOOK_TIMEOUT_MS
    ? ['WEBHOOK_LEASE_SECONDS: must be longer than WEBHOOK_TIMEOUT_MS (an attempt must end within its lease)']
    : []
}

export function webhookSettings(env: Env): WebhookSettings {
  return {
    worker: env.OUTBOX_WORKER,
    pollIntervalMs: env.OUTBOX_POLL_INTERVAL_MS,
    allowHttp: env.WEBHOOK_ALLOW_HTTP,
    allowPrivateTargets: env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    retrySeconds: env.WEBHOOK_RETRY_SCHEDULE.split(',').map(Number),
    connectTimeoutMs: env.WEBHOOK_CONNECT_TIMEOUT_MS,
    timeoutMs: env.WEBHOOK_TIMEOUT_MS,
    leaseSeconds: env.WEBHOOK_LEASE_SECONDS,
    concurrency: env.WEBHOOK_CONCURRENCY,
    hostConcurrency: env.WEBHOOK_HOST_CONCURRENCY,
    deactivateAfterSeconds: env.WEBHOOK_DEACTIVATE_AFTER_SECONDS,
    secretOverlapSeconds: env.WEBHOOK_SECRET_OVERLAP_SECONDS,
    deliveryRetentionDays: env.WEBHOOK_DELIVERY_RETENTION_DAYS,
  }
}
