import { ErrorEnvelope } from '../../schemas/common.js'

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed parameters or JSON (VAL_001, VAL_002)',
  401: 'Missing, invalid or expired access token (AUTH_001, AUTH_002)',
  403: 'The role or organization check failed (AUTH_003)',
  413: 'The request body is too large (VAL_001)',
  415: 'Unsupported Content-Type (VAL_001)',
  422: 'The body failed validation (VAL_001, VAL_002)',
  429: 'Rate limit exceeded; see Retry-After (RATE_001)',
  500: 'Unexpected error (SYS_001)',
  503: 'The database is unavailable (SYS_002)',
}

/** The error envelope, described for one status code. */
export const errorResponse = (status: number, description = ERROR_DESCRIPTIONS[status]) => ({
  ...ErrorEnvelope,
  description: description ?? 'Error',
})
