import { type Static, Type } from '@sinclair/typebox'

export const HousekeepingEnv = Type.Object(
  {
    HOUSEKEEPING_WORKER: Type.Boolean({
      default: true,
      description:
        'Run the housekeeping job in this instance: it purges expired password reset and refresh tokens, and webhook deliveries and audit records past their retention, in batches; on PostgreSQL one instance at a time (an advisory lock). `false`: leave it to other instances',
    }),
    HOUSEKEEPING_INTERVAL_MINUTES: Type.Integer({
      minimum: 1,
      maximum: 1440,
      default: 60,
      description: 'How often the housekeeping job runs (the first run is a minute after start)',
    }),
  },
  { title: 'Housekeeping' },
)

export interface HousekeepingSettings {
  /** Run the job in this instance (HOUSEKEEPING_WORKER). */
  worker: boolean
  intervalMs: number
}

export function housekeepingSettings(env: Static<typeof HousekeepingEnv>): HousekeepingSettings {
  return { worker: env.HOUSEKEEPING_WORKER, intervalMs: env.HOUSEKEEPING_INTERVAL_MINUTES * 60_000 }
}
