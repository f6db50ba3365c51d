/**
 * A sync cursor (`body.signature`, as a sync page hands it out) whose body names another position,
 * under the original signature: what a client forging its way through a list would send.
 */
export function forgedCursor(cursor: string): string {
  const [body = '', signature = ''] = cursor.split('.')
  const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { i: number }
  return `${Buffer.from(JSON.stringify({ ...payload, i: payload.i + 1 })).toString('base64url')}.${signature}`
}
