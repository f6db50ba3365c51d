import type { Duplex } from 'node:stream'
import { AppError, type StatusOf } from '../errors.js'
import { errorBody } from './envelope.js'

interface ClientError extends Error {
  code?: string
}

interface Answer {
  // A parser's refusal is never about a field: not 422.
  status: Exclude<StatusOf<'VAL_001'>, 422>
  reason: string
  message: string
  details: string
}

const ANSWERS: Record<string, Answer> = {
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: 'Request Timeout',
    message: 'Request timeout',
    details: 'The request was not received in time',
  },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    message: 'Request headers too large',
    details: 'The request headers exceed the size limit',
  },
}
const MALFORMED: Answer = {
  status: 400,
  reason: 'Bad Request',
  message: 'Invalid request',
  details: 'The HTTP request is malformed',
}

/**
 * Answers requests Node's HTTP parser rejects (malformed, headers too large, too slow) with the
 * error envelope, then closes the connection. Nothing is logged: the parser's error carries the raw
 * bytes received, which can hold a token or patient data.
 */
export function clientErrorHandler(error: ClientError, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const answer = ANSWERS[error.code ?? ''] ?? MALFORMED
  const body = JSON.stringify(
    errorBody(new AppError('VAL_001', answer.details, { status: answer.status, message: answer.message })),
  )
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${answer.status} ${answer.reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy()
}
