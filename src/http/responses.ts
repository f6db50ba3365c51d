import { STATUS_CODES } from 'node:http'
import { ErrorEnvelope } from '../../schemas/common.js'
import { ERRORS } from '../errors.js'

/** The codes of the error table that may come with a status, as the document describes them. */
function describeStatus(status: number): string {
  const codes = Object.entries(ERRORS)
    .filter(([, entry]) => (entry.statuses as readonly number[]).includes(status))
    .map(([code]) => code)
  return `${STATUS_CODES[status] ?? 'Error'} (${codes.join(', ')})`
}

/** The error envelope, described for one status code: by the error table unless the route says more. */
export const errorResponse = (status: number, description = describeStatus(status)) => ({
  ...ErrorEnvelope,
  description,
})
