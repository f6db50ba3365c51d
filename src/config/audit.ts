import { type Static, Type } from '@sinclair/typebox'

export const AuditEnv = Type.Object(
  {
    AUDIT_FLUSH_INTERVAL_MS: Type.Integer({
      minimum: 10,
      maximum: 60_000,
      default: 1000,
      description:
        'How often the audit records of failed calls whose insert failed are retried (every other record is written before its call is answered)',
    }),
    AUDIT_RETENTION_DAYS: Type.Integer({
      minimum: 0,
      maximum: 36_500,
      default: 2190,
      description:
        'Audit records older than this many days are purged: `0` (keep forever) or at least 365. The default, 2190 days (6 years), is the HIPAA retention period for required documentation; check the rules that apply to you before lowering it',
    }),
  },
  { title: 'Audit' },
)

type Env = Static<typeof AuditEnv>

export interface AuditSettings {
  flushIntervalMs: number
  /** 0: kept forever. */
  retentionDays: number
}

/** The audit trail is a regulatory record: a typo such as 30 must not purge all but a month of it. */
export function auditProblems(env: Env): string[] {
  return env.AUDIT_RETENTION_DAYS > 0 && env.AUDIT_RETENTION_DAYS < 365
    ? [`AUDIT_RETENTION_DAYS: must be 0 (keep forever) or at least 365 (got ${env.AUDIT_RETENTION_DAYS})`]
    : []
}

export function auditSettings(env: Env): AuditSettings {
  return { flushIntervalMs: env.AUDIT_FLUSH_INTERVAL_MS, retentionDays: env.AUDIT_RETENTION_DAYS }
}
