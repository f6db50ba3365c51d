import { ErrorEnvelope } from '../../schemas/common.js'
import { ERRORS } from '../errors.js'
import { STATUS_CODES } from './status-codes.js'

/** The codes of the error table that may come with a status, as the document describes them. */
function describeStatus(status: number): string {
  const codes = Object.entries(ERRORS)
    .filter(([, entry]) => (entry.statuses as readonly number[]).includes(status))
    .map(([code]) => code)
  return `${STATUS_CODES[status] ?? 'Error'} (${codes.join(', ')})`
}

const pascalCase = (text: string) =>
  text.replace(/(?:^|[^A-Za-z0-9]+)([A-Za-z0-9])/g, (_, c: string) => c.toUpperCase())

/** Names of responses the API description shares under `components.responses`, by status and description. */
const RESPONSE_NAMES = new Map<string, string>()
const responseKey = (status: number | string, description: string) => `${status} ${description}`

/**
 * Names the response of `status` described by `description`: the API description lists it once
 * under `components.responses` with that name, and every operation that answers it refers to it.
 */
export function nameResponse(status: number | string, description: string, name: string): void {
  const key = responseKey(status, description)
  const existing = RESPONSE_NAMES.get(key)
  if (existing !== undefined && existing !== name)
    throw new Error(`The ${status} response "${description}" is named both ${existing} and ${name}`)
  RESPONSE_NAMES.set(key, name)
}

/** The name given to a response by `nameResponse`, if any. */
export const responseName = (status: number | string, description: string) =>
  RESPONSE_NAMES.get(responseKey(status, description))

/**
 * The error envelope, described for one status code: by the error table (named after the status,
 * e.g. NotFound) unless the route says more, in which case `name` names it if several use it.
 */
export function errorResponse(status: number, description?: string, name?: string) {
  const text = description ?? describeStatus(status)
  const shared =
    name ?? (description === undefined ? pascalCase(STATUS_CODES[status] ?? `Status${status}`) : undefined)
  if (shared) nameResponse(status, text, shared)
  return { ...ErrorEnvelope, title: 'ErrorEnvelope', description: text }
}

/** 403 AUTH_003 about a record: the caller lacks the role, or `what` belongs to another organization. */
export const otherOrganization = (what: string, name?: string) =>
  errorResponse(403, `Missing role, or the ${what} belongs to another organization (AUTH_003)`, name)

/** 404 RES_001 about a record: there is no such `what`. */
export const noSuch = (what: string, name?: string) => errorResponse(404, `No such ${what} (RES_001)`, name)

/**
 * The error answers of a route about a record of the caller's organization: 403 AUTH_003 when it
 * is another organization's, 404 RES_001 when there is none. With `name`, the document names them
 * `<name>Forbidden` and `<name>NotFound`; `missing` says what the 404 looks for when it says more.
 */
export function recordErrors(what: string, name?: string, missing = what) {
  return {
    403: otherOrganization(what, name === undefined ? undefined : `${name}Forbidden`),
    404: noSuch(missing, name === undefined ? undefined : `${name}NotFound`),
  }
}
