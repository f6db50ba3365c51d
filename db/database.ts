import type { Kysely, Transaction } from 'kysely'
import type { AppointmentsTable } from './tables/appointments.js'
import type { AssertionJtisTable } from './tables/assertion-jtis.js'
import type { AuditLogTable } from './tables/audit-log.js'
import type { InvoicesTable, OrganizationCountersTable, PaymentsTable } from './tables/billing.js'
import type { BulkExportFilesTable, BulkExportsTable } from './tables/bulk-exports.js'
import type { ClientsTable } from './tables/clients.js'
import type { ClinicalRecordsTable } from './tables/clinical-records.js'
import type { DeletedRecordsTable } from './tables/deleted-records.js'
import type { DocumentsTable } from './tables/documents.js'
import type { EncounterAddendaTable } from './tables/encounter-addenda.js'
import type { EncountersTable } from './tables/encounters.js'
import type { MessagesTable } from './tables/messages.js'
import type { OrganizationsTable } from './tables/organizations.js'
import type { OutboxEventsTable } from './tables/outbox-events.js'
import type { PasswordResetTokensTable } from './tables/password-reset-tokens.js'
import type { PatientCountsTable } from './tables/patient-counts.js'
import type { PatientNameWordsTable } from './tables/patient-name-words.js'
import type { PatientsTable } from './tables/patients.js'
import type { ProviderExceptionsTable } from './tables/provider-exceptions.js'
import type { ProviderHoursTable } from './tables/provider-hours.js'
import type { ProvidersTable } from './tables/providers.js'
import type { RecordHistoryTable } from './tables/record-history.js'
import type { RefreshTokensTable } from './tables/refresh-tokens.js'
import type { SessionsTable } from './tables/sessions.js'
import type { SigningKeysTable } from './tables/signing-keys.js'
import type {
  AppGrantsTable,
  AuthorizationCodesTable,
  BrowserSessionsTable,
  LaunchContextsTable,
  SmartAppsTable,
} from './tables/smart-launch.js'
import type { TelehealthRoomsTable } from './tables/telehealth-rooms.js'
import type { UsersTable } from './tables/users.js'
import type { WebhookDeliveriesTable } from './tables/webhook-deliveries.js'
import type { WebhookDeliveryAttemptsTable } from './tables/webhook-delivery-attempts.js'
import type { WebhooksTable } from './tables/webhooks.js'

/** The whole schema as Kysely sees it; must match db/migrations. */
export interface Database {
  organizations: OrganizationsTable
  users: UsersTable
  sessions: SessionsTable
  refresh_tokens: RefreshTokensTable
  password_reset_tokens: PasswordResetTokensTable
  clients: ClientsTable
  smart_apps: SmartAppsTable
  browser_sessions: BrowserSessionsTable
  app_grants: AppGrantsTable
  launch_contexts: LaunchContextsTable
  authorization_codes: AuthorizationCodesTable
  assertion_jtis: AssertionJtisTable
  signing_keys: SigningKeysTable
  patients: PatientsTable
  patient_counts: PatientCountsTable
  patient_name_words: PatientNameWordsTable
  documents: DocumentsTable
  clinical_records: ClinicalRecordsTable
  messages: MessagesTable
  organization_counters: OrganizationCountersTable
  invoices: InvoicesTable
  payments: PaymentsTable
  telehealth_rooms: TelehealthRoomsTable
  providers: ProvidersTable
  provider_hours: ProviderHoursTable
  provider_exceptions: ProviderExceptionsTable
  appointments: AppointmentsTable
  encounters: EncountersTable
  encounter_addenda: EncounterAddendaTable
  outbox_events: OutboxEventsTable
  deleted_records: DeletedRecordsTable
  record_history: RecordHistoryTable
  audit_log: AuditLogTable
  webhooks: WebhooksTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_delivery_attempts: WebhookDeliveryAttemptsTable
  bulk_exports: BulkExportsTable
  bulk_export_files: BulkExportFilesTable
}

/** A handle that queries can run on: the database, or a transaction on it. */
export type Db = Kysely<Database> | Transaction<Database>
/** A transaction: a function that must run inside one says so by taking this. */
export type Trx = Transaction<Database>

/**
 * Runs `work` in a transaction: `db` itself when it already is one (the transaction of a FHIR
 * transaction Bundle, whose entries each run a service's writes), otherwise a new one.
 */
export const inTransaction = <T>(db: Db, work: (trx: Trx) => Promise<T>): Promise<T> =>
  db.isTransaction ? work(db as Trx) : db.transaction().execute(work)
