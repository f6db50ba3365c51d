import type { CrossOrganizationWork } from './across-organizations.js'
import type { Database } from './database.js'

// How each table would be placed on a Citus cluster, distributed by organization: the plan of
// docs/decisions/0001-sharding-by-organization.md, kept true against the migrated schema by
// tests/database/sharding-plan.test.ts and tests/api/access/organization-filter.test.ts.

type Table = keyof Database

/** Tenant data, always read and written with the organization in the query: spread by `organization_id`. */
export const DISTRIBUTED_TABLES = [
  'patients',
  'patient_counts',
  'patient_name_words',
  'appointments',
  'encounters',
  'encounter_addenda',
  'clinical_records',
  'documents',
  'messages',
  'invoices',
  'payments',
  'organization_counters',
  'providers',
  'provider_hours',
  'provider_exceptions',
  'telehealth_rooms',
  'webhooks',
  'webhook_deliveries',
  'webhook_delivery_attempts',
  'outbox_events',
  'audit_log',
  'deleted_records',
  'record_history',
  'bulk_exports',
  'bulk_export_files',
] as const satisfies readonly Table[]

/**
 * Copied to every node: small, rarely written, and referenced from tenant records (who made them),
 * which Citus allows of a reference table but not of a local one.
 */
export const REFERENCE_TABLES = ['organizations', 'signing_keys', 'users'] as const satisfies readonly Table[]

/** Kept on the coordinator: looked up by token hash, session or client id before the organization is known. */
export const LOCAL_TABLES = [
  'sessions',
  'refresh_tokens',
  'password_reset_tokens',
  'clients',
  'assertion_jtis',
  'smart_apps',
  'browser_sessions',
  'app_grants',
  'launch_contexts',
  'authorization_codes',
] as const satisfies readonly Table[]

/**
 * What Citus would refuse in the schema as it is, and what must change first. A distributed table's
 * `organization_id` that may be null, by table:
 */
export const NULLABLE_ORGANIZATION: Partial<Record<(typeof DISTRIBUTED_TABLES)[number], string>> = {
  audit_log:
    'Null for calls refused before anyone was identified (a bad token, an unknown route): those records move to a local table of their own, and the column becomes not null.',
}

/** …and a unique index or exclusion constraint of a distributed table without `organization_id`, by name. */
export const UNIQUE_WITHOUT_ORGANIZATION: Record<string, string> = {
  audit_log_pkey: 'The primary key of audit_log, `id` alone today, becomes `(id, organization_id)`.',
}

/**
 * The work whose statements cross organizations by design (each marks its SQL, see
 * db/across-organizations.ts): what those statements do, and how they would run on Citus.
 */
export const CROSS_ORGANIZATION_WORK: Record<CrossOrganizationWork, { statements: string; onCitus: string }> =
  {
    'outbox worker': {
      statements: 'Claims due deliveries of every organization, records their attempts, releases leases.',
      onCitus:
        'A multi-shard update, run in parallel on every shard; the LISTEN/NOTIFY wake-up goes through the coordinator.',
    },
    'bulk export worker': {
      statements:
        "Claims the oldest waiting export, then renews its lease, records its files and finishes it by the export's id and lease owner.",
      onCitus:
        'The claim fans out; the rest could add the organization (the claimed row has it) to become single-shard.',
    },
    housekeeping: {
      statements:
        'Lists webhooks and expired exports to purge each by its organization, and purges audit records that belong to no organization.',
      onCitus: 'A few fan-out reads per run.',
    },
    'audit batches': {
      statements:
        'One insert writes the audit records of every organization whose calls were answered while the previous insert ran.',
      onCitus: 'Citus routes each row of an `insert … select` to its shard.',
    },
    'owner probe': {
      statements:
        'The organization of a record by id, only to tell "another organization\'s record" (403) from "no such record" (404).',
      onCitus: 'Fans out, on the refusal path only; or the answer becomes 404 for both.',
    },
    'operations metrics': {
      statements: 'The webhook backlog gauges (pending deliveries, oldest age, deactivated webhooks).',
      onCitus: 'A small fan-out aggregate per scrape.',
    },
    'change feed waiter': {
      statements:
        'The newest event id and whether it is readable yet, read every 100 ms while long polls of the change feed wait, to wake them.',
      onCitus: 'A fan-out of one index lookup per shard; or one read per organization with waiting polls.',
    },
  }
