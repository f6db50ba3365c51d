import type { FastifyServerOptions } from 'fastify'
import type { LoggingSettings } from '../config/logging.js'

/** Where log lines go instead of standard output; `flush` writes out what it buffers. */
export interface LogStream {
  write(line: string): void
  flush?(): void
}

/**
 * The path a log line shows: the route template (`/api/patients/:id`), never the values in it, since
 * a client may put a name where an id belongs; for a request that matched no route, its first two
 * segments only. Query strings and bodies are never logged: they carry names and birth dates.
 */
function loggedPath(request: { url?: string; routeOptions?: { url?: string } }): string {
  const template = request.routeOptions?.url
  if (template) return template
  const segments = (request.url ?? '').split('?')[0]?.split('/') ?? []
  return segments.length > 3 ? `${segments.slice(0, 3).join('/')}/…` : segments.join('/')
}

// Credentials that could reach a log line inside an object (a header set, an error's context).
const REDACTED = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'headers.cookie',
  'headers["set-cookie"]',
  '*.password',
  '*.currentPassword',
  '*.newPassword',
  '*.token',
  '*.refreshToken',
  '*.refresh_token',
  '*.access_token',
  '*.secret',
  '*.client_secret',
]

/** The service's pino options: JSON lines at the configured level, paths only, credentials redacted. */
export function loggerOptions(settings: LoggingSettings, stream?: LogStream): FastifyServerOptions['logger'] {
  return {
    level: settings.level,
    ...(stream ? { stream } : {}),
    serializers: {
      req: (request) => ({ method: request.method, url: loggedPath(request) }),
    },
    redact: { paths: REDACTED, censor: '[redacted]' },
  }
}
