import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'

export interface FilePart {
  name?: string
  fileName: string
  contentType: string
  /** The bytes, or a generator of them for bodies too large to hold. */
  content: Buffer | (() => AsyncIterable<Buffer>)
}

/**
 * A multipart/form-data body as a stream, parts in the given order; fields are [name, value]
 * pairs. Streaming lets a test upload more than it could comfortably hold in memory.
 */
export function multipart(parts: Array<[string, string] | FilePart>) {
  const boundary = `----ehr-test-${randomBytes(8).toString('hex')}`
  async function* body(): AsyncGenerator<Buffer> {
    for (const part of parts) {
      if (Array.isArray(part)) {
        yield Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${part[0]}"\r\n\r\n${part[1]}\r\n`,
        )
        continue
      }
      yield Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${part.name ?? 'file'}"; filename="${part.fileName}"\r\nContent-Type: ${part.contentType}\r\n\r\n`,
      )
      if (Buffer.isBuffer(part.content)) yield part.content
      else yield* part.content()
      yield Buffer.from('\r\n')
    }
    yield Buffer.from(`--${boundary}--\r\n`)
  }
  return {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    payload: Readable.from(body()),
  }
}

/** `size` bytes that start with a real file signature. */
export function fileBytes(signature: string | Buffer, size: number): Buffer {
  const head = Buffer.isBuffer(signature) ? signature : Buffer.from(signature, 'latin1')
  return Buffer.concat([head, randomBytes(Math.max(0, size - head.length))])
}
