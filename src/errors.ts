/**
 * The error table: every code the API returns, its HTTP status and default message. README.md
 * documents the same table; the error handler is the only place that turns failures into responses.
 */
export const ERRORS = {
  AUTH_001: { status: 401, message: 'Authentication failed' },
  AUTH_002: { status: 401, message: 'Token expired' },
  AUTH_003: { status: 403, message: 'Insufficient permissions' },
  VAL_001: { status: 422, message: 'Validation failed' },
  VAL_002: { status: 422, message: 'Missing required field' },
  RES_001: { status: 404, message: 'Resource not found' },
  RES_002: { status: 409, message: 'Resource already exists' },
  RATE_001: { status: 429, message: 'Too many requests' },
  SYS_001: { status: 500, message: 'Internal server error' },
  SYS_002: { status: 503, message: 'Database unavailable' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ERRORS

export class AppError extends Error {
  readonly status: number

  constructor(
    readonly code: ErrorCode,
    readonly details: string,
    options: { status?: number; message?: string; cause?: unknown } = {},
  ) {
    super(options.message ?? ERRORS[code].message, { cause: options.cause })
    this.name = 'AppError'
    this.status = options.status ?? ERRORS[code].status
  }
}

export const notFound = (resource: string) => new AppError('RES_001', `${resource} not found`)
export const forbidden = (details: string) => new AppError('AUTH_003', details)
/** The request conflicts with the record's current state (e.g. an illegal status transition). */
export const conflict = (details: string) =>
  new AppError('RES_002', details, { message: 'Conflict with the current state' })

interface PgLikeError {
  code?: string
  constraint?: string
  message?: string
}

// What to tell the caller when a particular constraint stops a write; no values, only the rule.
const CONSTRAINT_DETAILS: Record<string, string> = {
  appointments_no_overlap: 'The provider already has an appointment overlapping this time',
  providers_organization_npi_key: 'A provider with this NPI already exists in this organization',
  providers_user_key: 'This user account is already linked to another provider',
  encounters_appointment_key: 'The appointment already has an encounter',
}

const CONNECTION_FAILURE =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EHOSTUNREACH|EPIPE|08\d{3}|57P0[123]|53300)$/

/**
 * PostgreSQL and driver failures that say something about the request (a duplicate, a bad
 * reference) or about the database being unreachable. Anything else is left for the generic 500.
 */
export function fromDatabaseError(error: unknown): AppError | undefined {
  const { code, constraint, message = '' } = (error ?? {}) as PgLikeError
  if (!code) {
    return /connection terminated|timeout exceeded when trying to connect|Connection terminated/i.test(
      message,
    )
      ? new AppError('SYS_002', 'The database could not be reached')
      : undefined
  }
  const known = constraint ? CONSTRAINT_DETAILS[constraint] : undefined
  if (code === '23505')
    return new AppError('RES_002', known ?? `A record with the same unique value exists (${constraint})`)
  if (code === '23503') {
    return message.startsWith('update or delete')
      ? new AppError('RES_002', 'The record is still referenced by other records', {
          message: 'Resource is in use',
        })
      : new AppError('VAL_001', 'A referenced record does not exist')
  }
  if (code === '23502') return new AppError('VAL_002', 'A required value is missing')
  if (code === '23514') return new AppError('VAL_001', `A constraint was violated (${constraint})`)
  if (code === '23P01')
    return new AppError('RES_002', known ?? `The record conflicts with an existing one (${constraint})`, {
      message: 'Conflict with an existing record',
    })
  if (code.startsWith('22'))
    return new AppError('VAL_001', 'A value is out of range or malformed', { status: 400 })
  if (code === '40001' || code === '40P01') {
    return new AppError('SYS_002', 'The database was busy with a conflicting change; retry the request')
  }
  if (CONNECTION_FAILURE.test(code)) return new AppError('SYS_002', 'The database could not be reached')
  return undefined
}
