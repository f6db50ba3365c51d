import { isIP } from 'node:net'
import { lazyAgent } from '../runtime/lazy-undici.js'
import {
  allowedAddresses,
  checkUrlShape,
  guardedConnector,
  type TargetPolicy,
  TargetRefused,
} from './targets.js'

// Enough of an answer to keep the connection reusable for a receiver that says "OK"; anything
// longer is cut off (the body is never stored or interpreted).
const RESPONSE_BODY_LIMIT = 4096
const USER_AGENT = 'ehr-service-webhooks/0.1'

export interface SenderOptions {
  connectTimeoutMs: number
  timeoutMs: number
  policy: TargetPolicy
}

export interface SendOutcome {
  statusCode: number | null
  /** null on a 2xx answer; otherwise a short reason that is safe to show to the webhook's owner. */
  error: string | null
  latencyMs: number
  /** The attempt was cut short by shutdown: it proves nothing and is not counted. */
  aborted: boolean
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host does not resolve',
  EAI_AGAIN: 'host does not resolve',
  UND_ERR_CONNECT_TIMEOUT: 'connect timeout',
  UND_ERR_HEADERS_TIMEOUT: 'timeout',
  UND_ERR_BODY_TIMEOUT: 'timeout',
  UND_ERR_SOCKET: 'connection closed',
}

/** Fixed texts only: a driver message can quote internal addresses. */
function describeFailure(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause
  if (error instanceof TargetRefused) return error.message
  if (cause instanceof TargetRefused) return cause.message
  const { name, code: rawCode } = (error ?? {}) as { name?: string; code?: unknown }
  if (name === 'TimeoutError') return 'timeout'
  // DOMExceptions carry a numeric code; only the string codes of Node and undici say anything.
  const code = typeof rawCode === 'string' ? rawCode : undefined
  if (code && CONNECTION_ERRORS[code]) return CONNECTION_ERRORS[code]
  if (code && /^ERR_(TLS|SSL)|CERT/.test(code)) return 'TLS handshake failed'
  return `connection failed (${code ?? name ?? 'unknown error'})`
}

async function readSome(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<void> {
  let read = 0
  for await (const chunk of body) {
    read += chunk.length
    if (read >= RESPONSE_BODY_LIMIT) {
      body.destroy()
      return
    }
  }
}

/**
 * Sends signed event bodies. Redirects are not followed (undici's `request` follows none without
 * the redirect interceptor): a 3xx is a failed attempt, so a receiver cannot bounce events to an
 * address that was never checked. Connections go only to addresses the target policy allows, and
 * the address a connection reached is checked again before anything is sent on it.
 */
export function createSender({ connectTimeoutMs, timeoutMs, policy }: SenderOptions) {
  const agent = lazyAgent({
    connect: guardedConnector(policy, { timeoutMs: connectTimeoutMs }),
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 4000,
  })

  async function send(
    url: string,
    headers: Record<string, string>,
    body: string,
    shutdown: AbortSignal,
  ): Promise<SendOutcome> {
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    try {
      const target = checkUrlShape(url, policy)
      // Names are checked by the connection's lookup; literal addresses never reach one.
      if (isIP(target.hostname.replace(/^\[(.*)\]$/, '$1'))) await allowedAddresses(target.hostname, policy)
      const { agent: dispatcher, request } = await agent.client()
      const response = await request(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...headers },
        body,
        dispatcher,
        signal: AbortSignal.any([shutdown, AbortSignal.timeout(timeoutMs)]),
      })
      await readSome(response.body)
      const ok = response.statusCode >= 200 && response.statusCode < 300
      return {
        statusCode: response.statusCode,
        error: ok ? null : `HTTP ${response.statusCode}`,
        latencyMs: elapsed(),
        aborted: false,
      }
    } catch (error) {
      return {
        statusCode: null,
        error: describeFailure(error),
        latencyMs: elapsed(),
        aborted: shutdown.aborted,
      }
    }
  }

  return { send, close: agent.close }
}

export type Sender = ReturnType<typeof createSender>
