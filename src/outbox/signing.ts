import { createHmac } from 'node:crypto'

/**
 * The Standard Webhooks `webhook-signature` header: `v1,` + base64 HMAC-SHA256 of
 * `id.timestamp.body` under each active secret, space-separated (two while a rotation overlaps).
 */
export function signatureHeader(
  secrets: readonly Buffer[],
  messageId: string,
  timestamp: number,
  body: string,
): string {
  const content = `${messageId}.${timestamp}.${body}`
  return secrets
    .map((secret) => `v1,${createHmac('sha256', secret).update(content).digest('base64')}`)
    .join(' ')
}
