import type { Db } from '../../../db/database.js'
import type { Message, MessageListQuery, SendMessageBody } from '../../../schemas/messages.js'
import type { Actor } from '../../access/organization-scope.js'
import { auditChange, withChangeAudit } from '../../audit/change-audit.js'
import { forbidden, invalidField, notFound } from '../../errors.js'
import { sortOrder, splitListQuery } from '../../lib/paging.js'
import { type RecordList, recordList } from '../../lib/row-list.js'
import { assertVersion, type ExpectedVersion } from '../../lib/versions.js'
import { requirePatient } from '../patients/service.js'
import { toMessage } from './mapper.js'
import {
  findVisibleMessage,
  insertMessage,
  isActiveColleague,
  lockReceivedMessage,
  mailbox,
  markRead,
} from './queries.js'

export async function sendMessage(db: Db, actor: Actor, body: SendMessageBody): Promise<Message> {
  // Another organization's user and no user at all get the same answer: ids reveal nothing.
  if (!(await isActiveColleague(db, actor.organizationId, body.recipientId))) {
    throw invalidField('recipientId', 'is not an active user of your organization')
  }
  if (body.patientId) await requirePatient(db, actor, body.patientId)
  let threadId: number | null = null
  if (body.replyToId) {
    const parent = await findVisibleMessage(db, actor.organizationId, actor.userId, body.replyToId)
    if (!parent) throw invalidField('replyToId', 'is not a message you sent or received')
    threadId = parent.thread_id ?? parent.id
  }
  const row = await withChangeAudit(db, (db) =>
    insertMessage(db, {
      organization_id: actor.organizationId,
      sender_id: actor.userId,
      recipient_id: body.recipientId,
      patient_id: body.patientId ?? null,
      thread_id: threadId,
      reply_to_id: body.replyToId ?? null,
      subject: body.subject,
      body: body.body,
    }),
  )
  return toMessage(row)
}

/** The caller's messages a list query asks for: a sync page holds those sent or read since. */
export function listMessages(db: Db, actor: Actor, query: MessageListQuery): RecordList<Message> {
  const { paging, filters } = splitListQuery(query)
  const sort = sortOrder(paging.sort, { createdAt: 'created_at' }, { field: 'createdAt', direction: 'desc' })
  const rows = mailbox(db, actor.organizationId, actor.userId, filters)
  return recordList(rows, paging, sort, (found) => found.map(toMessage))
}

export async function getMessage(db: Db, actor: Actor, id: number): Promise<Message> {
  const row = await findVisibleMessage(db, actor.organizationId, actor.userId, id)
  if (!row) throw notFound(`Message ${id}`)
  return toMessage(row)
}

/**
 * Only the recipient marks a message read (idempotently: the first read time stays, and reading a
 * read message again changes nothing, its version included). The sender gets 403; anyone else
 * 404, as for a message that does not exist. With `expectedVersion`, only while the message is
 * still at that version (412 otherwise).
 */
export async function readMessage(
  db: Db,
  actor: Actor,
  id: number,
  expectedVersion: ExpectedVersion,
): Promise<Message> {
  const row = await db.transaction().execute(async (trx) => {
    const current = await lockReceivedMessage(trx, actor.organizationId, actor.userId, id)
    if (!current) return undefined
    assertVersion(current.version, expectedVersion)
    if (current.read_at) return current
    const marked = await markRead(trx, actor.organizationId, id)
    await auditChange(trx, [id])
    return marked
  })
  if (row) return toMessage(row)
  if (await findVisibleMessage(db, actor.organizationId, actor.userId, id)) {
    throw forbidden('Only the recipient can mark a message read')
  }
  throw notFound(`Message ${id}`)
}
