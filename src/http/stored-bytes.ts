import type { FastifyReply } from 'fastify'
import type { ByteRange } from '../lib/byte-range.js'

/**
 * Sends bytes read from a store: all of them, or with 206 the one range the request asked for.
 * `read` reads the range it is given, or everything without one.
 */
export async function sendStoredBytes(
  reply: FastifyReply,
  size: number,
  range: ByteRange | undefined,
  read: (range?: ByteRange) => Promise<NodeJS.ReadableStream>,
) {
  if (!range) return reply.header('content-length', size).send(await read())
  return reply
    .code(206)
    .header('content-range', `bytes ${range.start}-${range.end}/${size}`)
    .header('content-length', range.end - range.start + 1)
    .send(await read(range))
}
