import { sql, type Transaction } from 'kysely'
import type { Database } from '../../db/database.js'
import type { EmittedEvent, EventData } from '../../schemas/events.js'

export const OUTBOX_CHANNEL = 'outbox_events'

/**
 * Records an event in the same transaction as the change that caused it, so the event exists
 * exactly when the change does. The NOTIFY is transactional too: listeners hear it on commit only.
 */
export async function enqueueEvent<E extends EmittedEvent>(
  trx: Transaction<Database>,
  organizationId: number,
  event: E,
  data: EventData<E>,
): Promise<void> {
  const payload = { event, timestamp: new Date().toISOString(), data }
  await sql`
    with inserted as (
      insert into outbox_events (organization_id, event_type, payload)
      values (${organizationId}, ${event}, ${JSON.stringify(payload)}::jsonb)
      returning id
    )
    select pg_notify(${OUTBOX_CHANNEL}, id::text) from inserted
  `.execute(trx)
}
