import type { Insertable } from 'kysely'
import type { Db, Trx } from '../../../db/database.js'
import type { MessagesTable } from '../../../db/tables/messages.js'
import type { MessageListQuery } from '../../../schemas/messages.js'
import { inOrganization, organizationRecords } from '../../lib/organization-records.js'
import type { ListFilters } from '../../lib/paging.js'
import { rowList } from '../../lib/row-list.js'

/** A message the user sent or received; nobody else's. */
export function findVisibleMessage(db: Db, organizationId: number, userId: number, id: number) {
  return inOrganization(db, organizationId)
    .selectFrom('messages')
    .selectAll()
    .where('id', '=', id)
    .where((eb) => eb.or([eb('sender_id', '=', userId), eb('recipient_id', '=', userId)]))
    .executeTakeFirst()
}

export async function isActiveColleague(db: Db, organizationId: number, userId: number) {
  const user = await inOrganization(db, organizationId)
    .selectFrom('users')
    .select('id')
    .where('id', '=', userId)
    .where('active', '=', true)
    .where('kind', '=', 'PERSON')
    .executeTakeFirst()
  return user !== undefined
}

const messageRecords = organizationRecords('messages')

export function insertMessage(db: Db, message: Omit<Insertable<MessagesTable>, 'read_at'>) {
  return messageRecords.insert(db, { ...message, read_at: null })
}

/** A message the user received, locked for the rest of the transaction. */
export function lockReceivedMessage(trx: Trx, organizationId: number, recipientId: number, id: number) {
  return inOrganization(trx, organizationId)
    .selectFrom('messages')
    .selectAll()
    .where('recipient_id', '=', recipientId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst()
}

/** Sets the read time of a message not read yet; the caller holds the row. */
export function markRead(trx: Trx, organizationId: number, id: number) {
  return inOrganization(trx, organizationId)
    .updateTable('messages')
    .set({ read_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** The user's messages in the folder matching the filter; a sync page holds those sent or read since. */
export function mailbox(
  db: Db,
  organizationId: number,
  userId: number,
  filter: ListFilters<MessageListQuery>,
) {
  let query = inOrganization(db, organizationId)
    .selectFrom('messages')
    .selectAll()
    .where(filter.folder === 'inbox' ? 'recipient_id' : 'sender_id', '=', userId)
  if (filter.unread) query = query.where('read_at', 'is', null)
  if (filter.patientId) query = query.where('patient_id', '=', filter.patientId)
  return rowList(db, query)
}
