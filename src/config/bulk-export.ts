import { type Static, Type } from '@sinclair/typebox'

export const BulkExportEnv = Type.Object(
  {
    BULK_EXPORT_WORKER: Type.Boolean({
      default: true,
      description:
        'Run FHIR bulk export jobs in this instance (`false`: leave them to other instances; kick-off and status still work)',
    }),
    BULK_EXPORT_FILE_MAX_BYTES: Type.Integer({
      minimum: 1024,
      maximum: 4_294_967_296,
      default: 67_108_864,
      description:
        'The largest NDJSON file of a bulk export (a type with more data gets several files); a single resource larger than this gets a file of its own',
    }),
    BULK_EXPORT_RETENTION_HOURS: Type.Number({
      minimum: 0.001,
      maximum: 8760,
      default: 24,
      description:
        'How long a finished bulk export (its status and files) is kept; afterwards its status URL answers 404 and the files are deleted',
    }),
    BULK_EXPORT_CONCURRENCY_PER_ORGANIZATION: Type.Integer({
      minimum: 1,
      maximum: 100,
      default: 1,
      description: 'How many bulk exports of one organization run at a time, over all instances; others wait',
    }),
    BULK_EXPORT_POOL_MAX: Type.Integer({
      minimum: 1,
      maximum: 50,
      default: 2,
      description:
        'PostgreSQL connections of bulk export jobs, a pool of their own so that exports never take the API’s connections (with the embedded database they share its one connection)',
    }),
    BULK_EXPORT_STATEMENT_TIMEOUT_MS: Type.Integer({
      minimum: 1000,
      maximum: 3_600_000,
      default: 300_000,
      description: 'The statement timeout of bulk export queries (their own pool’s setting)',
    }),
    BULK_EXPORT_LEASE_SECONDS: Type.Number({
      minimum: 1,
      maximum: 3600,
      default: 60,
      description:
        'The lease an instance takes on each export it runs, renewed as it writes: no other instance claims the export until the lease lapses, so after a crash another instance resumes it from its last finished file after this',
    }),
  },
  { title: 'FHIR bulk export' },
)

export interface BulkExportSettings {
  /** Run export jobs in this instance (BULK_EXPORT_WORKER). */
  worker: boolean
  jobs: { fileMaxBytes: number; retentionHours: number; leaseSeconds: number; perOrganization: number }
  /** The exports' own PostgreSQL pool. */
  pool: { poolMax: number; statementTimeoutMs: number }
}

export function bulkExportSettings(env: Static<typeof BulkExportEnv>): BulkExportSettings {
  return {
    worker: env.BULK_EXPORT_WORKER,
    jobs: {
      fileMaxBytes: env.BULK_EXPORT_FILE_MAX_BYTES,
      retentionHours: env.BULK_EXPORT_RETENTION_HOURS,
      leaseSeconds: env.BULK_EXPORT_LEASE_SECONDS,
      perOrganization: env.BULK_EXPORT_CONCURRENCY_PER_ORGANIZATION,
    },
    pool: { poolMax: env.BULK_EXPORT_POOL_MAX, statementTimeoutMs: env.BULK_EXPORT_STATEMENT_TIMEOUT_MS },
  }
}
