import type { AuditLogTable } from './tables/audit-log.js'
import type { OrganizationsTable } from './tables/organizations.js'
import type { OutboxEventsTable } from './tables/outbox-events.js'
import type { PatientsTable } from './tables/patients.js'
import type { SessionsTable } from './tables/sessions.js'
import type { SigningKeysTable } from './tables/signing-keys.js'
import type { UsersTable } from './tables/users.js'

/** The whole schema as Kysely sees it; must match db/migrations. */
export interface Database {
  organizations: OrganizationsTable
  users: UsersTable
  sessions: SessionsTable
  signing_keys: SigningKeysTable
  patients: PatientsTable
  outbox_events: OutboxEventsTable
  audit_log: AuditLogTable
}
