import type { MessageRow } from '../../../db/tables/messages.js'
import type { Message } from '../../../schemas/messages.js'

/** The API's message from a row; a message that starts a thread is its own thread. */
export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    senderId: row.sender_id,
    recipientId: row.recipient_id,
    patientId: row.patient_id,
    threadId: row.thread_id ?? row.id,
    replyToId: row.reply_to_id,
    subject: row.subject,
    body: row.body,
    readAt: row.read_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}
