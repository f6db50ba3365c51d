import type { ColumnType, Generated, Selectable } from 'kysely'

export interface WebhooksTable {
  id: ColumnType<number, never, never>
  organization_id: number
  url: string
  events: string[]
  active: Generated<boolean>
  /** The signing secret, sealed with the encryption key (never stored in clear). */
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Date | null
  /** Since when every attempt has failed; null after a success. */
  failing_since: Date | null
  deactivated_at: Date | null
  deactivation_reason: 'MANUAL' | 'FAILING' | null
  created_by: number | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
}

export type WebhookRow = Selectable<WebhooksTable>
