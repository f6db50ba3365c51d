import { type Insertable, type Kysely, sql } from 'kysely'
import type { Database } from '../../../db/database.js'
import type { MessagesTable } from '../../../db/tables/messages.js'
import type { PageQuery } from '../../../schemas/common.js'
import { fetchPage, orderByExpression, type SortOrder } from '../../lib/paging.js'

/** A message the user sent or received; nobody else's. */
export function findVisibleMessage(db: Kysely<Database>, organizationId: number, userId: number, id: number) {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where((eb) => eb.or([eb('sender_id', '=', userId), eb('recipient_id', '=', userId)]))
    .executeTakeFirst()
}

export async function isActiveColleague(db: Kysely<Database>, organizationId: number, userId: number) {
  const user = await db
    .selectFrom('users')
    .select('id')
    .where('id', '=', userId)
    .where('organization_id', '=', organizationId)
    .where('active', '=', true)
    .where('kind', '=', 'PERSON')
    .executeTakeFirst()
  return user !== undefined
}

export function insertMessage(db: Kysely<Database>, message: Omit<Insertable<MessagesTable>, 'read_at'>) {
  return db
    .insertInto('messages')
    .values({ ...message, read_at: null })
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Marks read once; a second call keeps the first read time. */
export function markRead(db: Kysely<Database>, organizationId: number, recipientId: number, id: number) {
  return db
    .updateTable('messages')
    .set({ read_at: sql`coalesce(read_at, now())` })
    .where('organization_id', '=', organizationId)
    .where('recipient_id', '=', recipientId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}

export interface MailboxFilter {
  folder: 'inbox' | 'sent'
  unread?: boolean
  patientId?: number
}

export function listMailbox(
  db: Kysely<Database>,
  organizationId: number,
  userId: number,
  filter: MailboxFilter,
  sort: SortOrder,
  paging: PageQuery,
) {
  let query = db
    .selectFrom('messages')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where(filter.folder === 'inbox' ? 'recipient_id' : 'sender_id', '=', userId)
  if (filter.unread) query = query.where('read_at', 'is', null)
  if (filter.patientId) query = query.where('patient_id', '=', filter.patientId)
  return fetchPage(db, query.orderBy(orderByExpression(sort)), paging)
}
