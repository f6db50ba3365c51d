import type { ErrorEnvelope } from '../schemas/common.js'

/**
 * The error table: every code the API returns, its usual HTTP status and default message, every
 * status it may carry and when. docs/reference/errors.md is generated from it (`npm run docs`);
 * the error handler is the only place that turns failures into responses.
 */
export const ERRORS = {
  AUTH_001: {
    status: 401,
    message: 'Authentication failed',
    statuses: [401, 400],
    when: 'Missing, malformed or invalid token; wrong login credentials or current password (401); invalid refresh token, reset token or authorization code (400)',
  },
  AUTH_002: { status: 401, message: 'Token expired', statuses: [401], when: 'Expired access token' },
  AUTH_003: {
    status: 403,
    message: 'Insufficient permissions',
    statuses: [403],
    when: 'Role check failed, or the record belongs to another organization',
  },
  // 403 rather than 200 with `success: false`: no client, generated or hand-written, can take an
  // answer that carries no tokens for a sign-in that worked.
  AUTH_004: {
    status: 403,
    message: 'Password change required',
    statuses: [403],
    when: 'Sign-in with a correct but temporary password (set by an administrator or generated for a new account): no tokens; `data.requiresPasswordChange` is `true`. Change it with POST /api/auth/change-password (username and current password, no token), then sign in again',
  },
  VAL_001: {
    status: 422,
    message: 'Validation failed',
    statuses: [400, 422, 413, 415, 416, 408, 431],
    when: 'Malformed parameters, JSON, multipart body or HTTP, or a URL with an undecodable or overlong path segment (400); body fails validation (422); body or upload too large (413); unsupported Content-Type or file type (415); download range outside the document (416); request too slow (408); headers too large (431)',
  },
  VAL_002: {
    status: 422,
    message: 'Missing required field',
    statuses: [400, 422],
    when: 'Every problem found is a missing required parameter (400) or body field (422); with any other problem as well, VAL_001',
  },
  RES_001: {
    status: 404,
    message: 'Resource not found',
    statuses: [404, 405, 410],
    when: 'No such record or route (404); a path that exists, called with a method it does not have: no route for that request, so this code, and `Allow` lists the methods the path has (405); a FHIR read of a record that was deleted (410)',
  },
  RES_002: {
    status: 409,
    message: 'Resource already exists',
    statuses: [409],
    when: "Duplicate (e.g. an MRN already used in the organization), a double booking, or a change the record's status does not allow",
  },
  RES_003: {
    status: 412,
    message: 'Precondition failed',
    statuses: [412, 428],
    when: '`If-Match` names a version the record no longer has; `details` gives the current one (412). A write without `If-Match` while `REQUIRE_IF_MATCH` is on (428)',
  },
  RATE_001: {
    status: 429,
    message: 'Too many requests',
    statuses: [429],
    when: 'Rate limit exceeded; `Retry-After` says when to try again',
  },
  SYS_001: {
    status: 500,
    message: 'Internal server error',
    statuses: [500, 503],
    when: 'Unexpected error; no internals are returned, quote the request id (500). The external identity provider did not answer a sign-in, refresh or logout, or telehealth is not configured (503)',
  },
  SYS_002: {
    status: 503,
    message: 'Database unavailable',
    statuses: [503],
    when: 'The database is unreachable or busy, or the document store (its directory or S3 bucket) failed or did not answer',
  },
} as const satisfies Record<
  string,
  { status: number; message: string; statuses: readonly number[]; when: string }
>

export type ErrorCode = keyof typeof ERRORS

/** The statuses the error table allows for a code: another one does not compile. */
export type StatusOf<C extends ErrorCode> = (typeof ERRORS)[C]['statuses'][number]

/** Whether the error table allows `status` for `code`. */
export const allowsStatus = <C extends ErrorCode>(code: C, status: number): status is StatusOf<C> =>
  (ERRORS[code].statuses as readonly number[]).includes(status)

/** The problems of a request that failed schema validation, one per field, for machines. */
export type FieldProblems = NonNullable<ErrorEnvelope['error']['fields']>

export class AppError<C extends ErrorCode = ErrorCode> extends Error {
  readonly status: number
  /** Schema validation failures only: the problems `details` sums up. */
  readonly fields: FieldProblems | undefined

  constructor(
    readonly code: C,
    readonly details: string,
    options: { status?: StatusOf<C>; message?: string; cause?: unknown; fields?: FieldProblems } = {},
  ) {
    super(options.message ?? ERRORS[code].message, { cause: options.cause })
    this.name = 'AppError'
    this.status = options.status ?? ERRORS[code].status
    this.fields = options.fields
  }
}

export const notFound = (resource: string) => new AppError('RES_001', `${resource} not found`)
export const forbidden = (details: string) => new AppError('AUTH_003', details)
/** The request conflicts with the record's current state (e.g. an illegal status transition). */
export const conflict = (details: string) =>
  new AppError('RES_002', details, { message: 'Conflict with the current state' })

/** A conditional write whose `If-Match` no longer names the record's version. */
export const preconditionFailed = (currentVersion: number) =>
  new AppError(
    'RES_003',
    `The record has changed: its current version is ${currentVersion} (ETag W/"${currentVersion}"); read it again and retry`,
  )

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
    if (/^Query read timeout$/.test(message)) {
      return new AppError('SYS_002', 'The database did not answer in time; try again later')
    }
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
  // A statement past DATABASE_QUERY_TIMEOUT_MS, cancelled by the server.
  if (code === '57014') return new AppError('SYS_002', 'The database did not answer in time; try again later')
  if (code === '40001' || code === '40P01') {
    return new AppError('SYS_002', 'The database was busy with a conflicting change; retry the request')
  }
  if (CONNECTION_FAILURE.test(code)) return new AppError('SYS_002', 'The database could not be reached')
  return undefined
}
