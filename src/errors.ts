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
    when: 'Malformed parameters, JSON, multipart body or HTTP, JSON nested more than 64 levels deep or not UTF-8, or a URL with an undecodable or overlong path segment (400); body fails validation with no required field missing (422); body or upload too large (413); unsupported Content-Type or file type (415); download range outside the document (416); request too slow (408); headers too large (431)',
  },
  VAL_002: {
    status: 422,
    message: 'Missing required field',
    statuses: [400, 422],
    when: 'A required parameter (400) or body field (422) is missing. Of several problems, a missing required member decides the code: VAL_002 whatever else is wrong (`error.fields` lists every problem), VAL_001 only when nothing required is missing',
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
    when: "Duplicate (e.g. an MRN already used in the organization; `error.fields` names the field), a double booking, or a change the record's status does not allow",
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

/** The problems of a request that failed validation, one per field, for machines. */
export type FieldProblems = NonNullable<ErrorEnvelope['error']['fields']>

interface ErrorOptions<C extends ErrorCode> {
  status?: StatusOf<C>
  message?: string
  cause?: unknown
  fields?: FieldProblems
}

type ValidationCode = 'VAL_001' | 'VAL_002'

/**
 * The options an error takes. A validation error answered 422 (its default) names the fields at
 * fault, so that a client can point at them: one without `fields` must say another status.
 */
type OptionsOf<C extends ErrorCode> = C extends ValidationCode
  ? [
      options:
        | (ErrorOptions<C> & { status: Exclude<StatusOf<C>, 422> })
        | (ErrorOptions<C> & { fields: FieldProblems }),
    ]
  : [options?: ErrorOptions<C>]

export class AppError<C extends ErrorCode = ErrorCode> extends Error {
  readonly status: number
  /** The problems `details` sums up, per field: every 422 (validation failures), a duplicate value. */
  readonly fields: FieldProblems | undefined

  constructor(
    readonly code: C,
    readonly details: string,
    ...[options = {}]: OptionsOf<C>
  ) {
    super(options.message ?? ERRORS[code].message, { cause: options.cause })
    this.name = 'AppError'
    this.status = options.status ?? ERRORS[code].status
    this.fields = options.fields
  }
}

/** The same error with its fields named otherwise (a FHIR write names the elements of its resource). */
export function withFields(error: AppError, fields: FieldProblems): AppError {
  const options = { status: error.status, message: error.message, cause: error.cause, fields }
  return new AppError(error.code, error.details, options as never)
}

/** `path message` for each problem, `body message` for the body as a whole, as schema failures read. */
const fieldsText = (fields: FieldProblems) =>
  fields.map(({ path, message }) => `${path || 'body'} ${message}`).join('; ')

/**
 * A request whose fields break a rule the schema cannot state (a check digit, one value against
 * another, an address refused): 422 with the fields named in `fields`, as a schema failure has
 * them. `details` says the same in words, or better where a sentence reads better.
 */
export const invalidFields = (
  fields: FieldProblems,
  details = fieldsText(fields),
  code: ValidationCode = 'VAL_001',
) => new AppError(code, details, { fields })

/** One field breaking a rule: `invalidField('npi', 'fails the NPI check digit')`. */
export const invalidField = (path: string, message: string) => invalidFields([{ path, message }])

export const notFound = (resource: string) => new AppError('RES_001', `${resource} not found`)
/** The record existed and was deleted (FHIR's 410). */
export const gone = (details: string) => new AppError('RES_001', details, { status: 410, message: 'Gone' })
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

interface ConstraintAnswer {
  /** The rule, in words: no values, and no name of a table, column or constraint. */
  details: string
  /** The request field the rule is about, when the client sent it in the body. */
  field?: { path: string; message: string }
  message?: string
}

const ALREADY_USED = 'is already used'

/**
 * What to tell the caller when a constraint a client can run into stops a write (db/migrations:
 * every unique and exclusion constraint on values a request sets). The others hold values the
 * service makes itself (token hashes, storage keys, invoice numbers) and get the generic answer.
 */
const CONSTRAINTS = {
  patients_organization_mrn_key: {
    details: 'A patient with this MRN already exists in this organization',
    field: { path: 'mrn', message: `${ALREADY_USED} by another patient of this organization` },
  },
  users_email_key: {
    details: 'An account with this e-mail address already exists',
    field: { path: 'email', message: `${ALREADY_USED} by another account` },
  },
  providers_organization_npi_key: {
    details: 'A provider with this NPI already exists in this organization',
    field: { path: 'npi', message: `${ALREADY_USED} by another provider of this organization` },
  },
  providers_user_key: {
    details: 'This user account is already linked to another provider',
    field: { path: 'userId', message: 'is already linked to another provider' },
  },
  encounters_appointment_key: {
    details: 'The appointment already has an encounter',
    field: { path: 'appointmentId', message: 'already has an encounter' },
  },
  telehealth_rooms_appointment_id_key: {
    details: 'The appointment already has a telehealth room',
    field: { path: 'appointmentId', message: 'already has a telehealth room' },
  },
  payments_idempotency_key: { details: 'This Idempotency-Key is being used by another payment' },
  appointments_no_overlap: {
    details: 'The provider already has an appointment overlapping this time',
    message: 'Conflict with an existing record',
  },
} as const satisfies Record<string, ConstraintAnswer>

export type KnownConstraint = keyof typeof CONSTRAINTS

/** The 409 for a write a known constraint refused, with the field it is about. */
export function constraintConflict(constraint: KnownConstraint): AppError<'RES_002'> {
  const answer: ConstraintAnswer = CONSTRAINTS[constraint]
  return new AppError('RES_002', answer.details, {
    message: answer.message,
    fields: answer.field ? [answer.field] : undefined,
  })
}

const isKnownConstraint = (name: string | undefined): name is KnownConstraint =>
  name !== undefined && Object.hasOwn(CONSTRAINTS, name)

// The services check what these stand for before writing: which field the database refused is not
// known here, so the problem is the body's.
const wholeBody = (message: string, details: string, code: 'VAL_001' | 'VAL_002' = 'VAL_001') =>
  invalidFields([{ path: '', message }], details, code)

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
  // Constraint, table and column names are the schema's, not the API's: never in an answer.
  if ((code === '23505' || code === '23P01') && isKnownConstraint(constraint))
    return constraintConflict(constraint)
  if (code === '23505') return new AppError('RES_002', 'A record with the same unique value already exists')
  if (code === '23503') {
    return message.startsWith('update or delete')
      ? new AppError('RES_002', 'The record is still referenced by other records', {
          message: 'Resource is in use',
        })
      : wholeBody('refers to a record that does not exist', 'A referenced record does not exist')
  }
  if (code === '23502') return wholeBody('lacks a required value', 'A required value is missing', 'VAL_002')
  if (code === '23514')
    return wholeBody('is outside what the record allows', 'A value is outside what the record allows')
  if (code === '23P01')
    return new AppError('RES_002', 'The record conflicts with an existing one', {
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
