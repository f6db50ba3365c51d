import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { clientErrorHandler } from '../../../src/http/client-errors.js'

function answerTo(code: string | undefined) {
  const socket = new PassThrough()
  const written: string[] = []
  socket.on('data', (chunk: Buffer) => written.push(chunk.toString()))
  clientErrorHandler(Object.assign(new Error('parser error'), { code }), socket)
  return { text: written.join(''), destroyed: socket.destroyed }
}

describe('clientErrorHandler', () => {
  it('answers a request that took longer than REQUEST_TIMEOUT_MS with 408 in the envelope and closes', () => {
    const { text, destroyed } = answerTo('ERR_HTTP_REQUEST_TIMEOUT')
    expect(text).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/)
    const body = text.slice(text.indexOf('\r\n\r\n') + 4)
    expect(text).toContain(`Content-Length: ${Buffer.byteLength(body)}\r\n`)
    expect(JSON.parse(body)).toEqual({
      success: false,
      message: 'Request timeout',
      error: { code: 'VAL_001', details: 'The request was not received in time' },
    })
    expect(destroyed).toBe(true)
  })

  it('answers anything else the parser rejects with 400, and nothing to a connection already reset', () => {
    expect(answerTo('HPE_INVALID_METHOD').text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
    expect(answerTo(undefined).text).toMatch(/^HTTP\/1\.1 400 /)
    expect(answerTo('ECONNRESET').text).toBe('')
  })
})
