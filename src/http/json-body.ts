import { isUtf8 } from 'node:buffer'
import { errorCodes, type FastifyRequest } from 'fastify'
import { AppError } from '../errors.js'
import { fieldPath } from './validation-messages.js'

/**
 * How deep arrays and objects may lie within each other in a JSON body. No request of the API or
 * of FHIR comes near it (a FHIR resource nests about ten levels); every recursive walk of a body
 * (validation, merge patch, serialisation) stays far from the stack's limit, which a body of a
 * few kilobytes of `[` would otherwise reach.
 */
export const MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/**
 * Whether arrays and objects nest deeper than `limit` in `text`, read as JSON text would be: one
 * pass, no recursion, brackets inside strings not counted. Text that is not JSON gets an answer
 * all the same; the parser refuses it afterwards.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at)
    if (code === QUOTE) {
      for (at++; at < text.length; at++) {
        const inner = text.charCodeAt(at)
        if (inner === BACKSLASH) at++
        else if (inner === QUOTE) break
      }
    } else if (code === OPEN_ARRAY || code === OPEN_OBJECT) {
      if (++depth > limit) return true
    } else if (code === CLOSE_ARRAY || code === CLOSE_OBJECT) depth--
  }
  return false
}

// A member named like these would replace an object's prototype when a body is merged or copied
// member by member (`target[key] = value`): prototype pollution. No schema of the API has one, so
// one is an unknown field. The text is searched first (escapes such as `\u005f` included), so a
// body without either name is not walked.
const FORBIDDEN_MEMBERS = new Set(['__proto__', 'constructor'])
const SUSPECT =
  /"(?:_|\\u005[Ff]){2}(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff]){2}"\s*:|"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/

/** The path of the first member named `__proto__` or `constructor`, walked without recursion. */
function forbiddenMember(value: unknown): string[] | undefined {
  const pending: [unknown, string[]][] = [[value, []]]
  while (pending.length > 0) {
    const [current, path] = pending.pop() as [unknown, string[]]
    if (typeof current !== 'object' || current === null) continue
    for (const [key, member] of Object.entries(current)) {
      const at = [...path, key]
      if (FORBIDDEN_MEMBERS.has(key)) return at
      pending.push([member, at])
    }
  }
  return undefined
}

const tooDeep = () =>
  new AppError(
    'VAL_001',
    `The request body nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep, the limit`,
    { status: 400, message: 'Invalid request' },
  )

/**
 * JSON bodies (application/json and the JSON media types of FHIR and merge patch): the nesting
 * limit is checked on the text before anything reads it, then the text is parsed. A leading byte
 * order mark is ignored. Empty or malformed text raises Fastify's own errors, answered as 400.
 */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY()
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
  if (nestsDeeperThan(json, MAX_JSON_DEPTH)) throw tooDeep()
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    throw new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY()
  }
  const forbidden = SUSPECT.test(json) ? forbiddenMember(value) : undefined
  if (forbidden) {
    const path = fieldPath(forbidden)
    throw new AppError('VAL_001', `${path} is not a known field`, {
      status: 422,
      fields: [{ path, message: 'is not a known field' }],
    })
  }
  return value
}

const notUtf8 = () =>
  new AppError('VAL_001', 'The request body is not valid UTF-8', { status: 400, message: 'Invalid request' })

/**
 * `parseJsonBody` as a Fastify content-type parser (`parseAs: 'buffer'`). JSON is UTF-8 (RFC 8259):
 * bytes that are not would be decoded to U+FFFD and stored as if the client had sent that.
 */
export function jsonBodyParser(
  _request: FastifyRequest,
  body: string | Buffer,
  done: (error: Error | null, value?: unknown) => void,
): void {
  let value: unknown
  try {
    if (typeof body !== 'string' && !isUtf8(body)) throw notUtf8()
    value = parseJsonBody(body.toString())
  } catch (error) {
    done(error as Error)
    return
  }
  done(null, value)
}
