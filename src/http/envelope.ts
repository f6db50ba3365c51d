import type { ErrorEnvelope } from '../../schemas/common.js'
import type { AppError } from '../errors.js'

// The spec's envelope is the only body shape under /api: built here, for successes and failures alike.

/** A successful envelope; its `data` is checked against the route's response schema. */
export const ok = <T>(message: string, data: T) => ({ success: true as const, message, data })

/** The error envelope of an AppError. */
export const errorBody = (error: AppError): ErrorEnvelope => ({
  success: false,
  message: error.message,
  error: {
    code: error.code,
    details: error.details,
    ...(error.fields === undefined ? {} : { fields: error.fields }),
  },
})
