import type { ErrorObject } from 'ajv'
import { ErrorEnvelope } from '../../schemas/common.js'
import type { FieldProblems } from '../errors.js'

/** One problem: where (`identification.gender`, '' for the whole) and what, without the path. */
type FieldProblem = FieldProblems[number]

export interface ValidationProblems {
  /** The first MAX_PROBLEMS problems, in schema order, without duplicates. */
  problems: FieldProblem[]
  /** How many more there were. */
  omitted: number
  /** Whether any problem, the omitted ones included, is a missing required member. */
  missing: boolean
}

// A request with a thousand bad items gets the first few and a count: enough to see the pattern,
// and the response stays small whatever the body held. The envelope's schema sets the number.
const MAX_PROBLEMS = ErrorEnvelope.properties.error.properties.fields.maxItems ?? 20

// Member names are echoed (an unknown field must be named to be fixed), but a name can be long.
const MAX_SEGMENT = 64

type Schema = { type?: unknown; const?: unknown; enum?: unknown[]; description?: unknown }

const FORMATS: Record<string, string> = {
  date: 'a date YYYY-MM-DD',
  'date-time': 'an RFC 3339 date-time such as 2026-01-31T09:00:00Z',
  time: 'a time HH:MM:SS with a time zone, such as 09:00:00Z',
  email: 'an e-mail address',
  uri: 'an absolute URI such as https://example.com/path',
  uuid: 'a UUID',
}

const TYPES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
}

// The Text schemas' "at least one visible character": said in words, not as a regular expression.
const NOT_BLANK = '\\S'

const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value))

const typeNames = (type: unknown): string =>
  (Array.isArray(type) ? type : String(type).split(','))
    .map((name: string) => TYPES[name] ?? name)
    .join(' or ')

const plural = (count: unknown, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`

/** The rule broken, in words. Only the schema and Ajv's parameters are used, never the value sent. */
function messageOf(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>
  const parent = (error.parentSchema ?? {}) as Schema
  switch (error.keyword) {
    case 'required':
      return 'is required'
    case 'additionalProperties':
      return 'is not a known field'
    case 'enum':
      return `must be one of ${(params.allowedValues as unknown[]).map(shown).join(', ')}`
    case 'const':
      return `must be ${shown(params.allowedValue)}`
    case 'format': {
      const format = String(params.format)
      return `must be ${FORMATS[format] ?? `a valid ${format}`}`
    }
    case 'type':
      return params.type === undefined ? (error.message ?? 'is invalid') : `must be ${typeNames(params.type)}`
    case 'minimum':
      return `must be at least ${params.limit}`
    case 'maximum':
      return `must be at most ${params.limit}`
    case 'exclusiveMinimum':
      return `must be greater than ${params.limit}`
    case 'exclusiveMaximum':
      return `must be less than ${params.limit}`
    case 'multipleOf':
      return `must be a multiple of ${params.multipleOf}`
    case 'minLength':
      return params.limit === 1
        ? 'must not be empty'
        : `must have at least ${plural(params.limit, 'character')}`
    case 'maxLength':
      return `must have at most ${plural(params.limit, 'character')}`
    case 'minItems':
      return `must have at least ${plural(params.limit, 'item')}`
    case 'maxItems':
      return `must have at most ${plural(params.limit, 'item')}`
    case 'uniqueItems':
      return 'must not hold the same item twice'
    case 'minProperties':
      return `must have at least ${plural(params.limit, 'member')}`
    case 'maxProperties':
      return `must have at most ${plural(params.limit, 'member')}`
    case 'pattern': {
      if (params.pattern === NOT_BLANK) return 'must not be blank'
      const description = typeof parent.description === 'string' ? parent.description.replace(/\.$/, '') : ''
      // A short description says it better than the expression; a long one would swamp the list.
      const about =
        description && description.length <= 100 && !description.includes('\n') ? ` (${description})` : ''
      return `must match the pattern ${params.pattern}${about}`
    }
    case 'anyOf':
      return 'does not match any of the allowed forms'
    default:
      // Ajv's own wording ("must …"): it names the rule and its limits, never the value.
      return error.message ?? 'is invalid'
  }
}

const decode = (segment: string) => segment.replaceAll('~1', '/').replaceAll('~0', '~')
const clipped = (segment: string) =>
  segment.length > MAX_SEGMENT ? `${segment.slice(0, MAX_SEGMENT)}…` : segment

/** `['items', '0', 'code']` → `items.0.code`, each member name clipped. */
export const fieldPath = (segments: readonly string[]) => segments.map(clipped).join('.')

/** `/items/0/code` → `items.0.code`, with the member a `required` or `additionalProperties` names. */
function pathOf(error: ErrorObject): string {
  const segments = error.instancePath.split('/').slice(1).map(decode)
  const params = error.params as Record<string, unknown>
  if (error.keyword === 'required') segments.push(String(params.missingProperty))
  if (error.keyword === 'additionalProperties') segments.push(String(params.additionalProperty))
  return fieldPath(segments)
}

/** Whether `error` comes from inside the anyOf `outer` (`prefix` is its schemaPath and a slash). */
const within = (error: ErrorObject, outer: ErrorObject, prefix: string) =>
  error.schemaPath.startsWith(prefix) &&
  (error.instancePath === outer.instancePath ||
    (error.instancePath.startsWith(outer.instancePath) &&
      error.instancePath[outer.instancePath.length] === '/'))

const branchOf = (error: ErrorObject, outer: ErrorObject) =>
  Number.parseInt(error.schemaPath.slice(outer.schemaPath.length + 1), 10)

const isNull = (schema: Schema | undefined) => schema?.type === 'null'

/** What the branches of an anyOf are: a union of literals, or one schema and null (Nullable). */
interface Shape {
  allowedValues?: unknown[]
  soleBranch?: number
}

// Worked out once per anyOf schema: a bad item of a long array fails the same anyOf each time.
const shapes = new WeakMap<Schema[], Shape>()

function shapeOf(branches: Schema[]): Shape {
  let shape = shapes.get(branches)
  if (shape) return shape
  const others = [...branches.keys()].filter((index) => !isNull(branches[index]))
  const literals = others.map((index) => branches[index] as Schema)
  shape = {}
  if (literals.length > 0 && literals.every((branch) => 'const' in branch || branch.enum?.length === 1))
    shape.allowedValues = literals.map((branch) => ('const' in branch ? branch.const : branch.enum?.[0]))
  else if (others.length === 1) shape.soleBranch = others[0]
  shapes.set(branches, shape)
  return shape
}

/**
 * Which errors a failed anyOf of several real alternatives stands for: those of the one branch the
 * value's type does not rule out; if every branch is ruled out, the types allowed; otherwise the
 * anyOf itself ("does not match any of the allowed forms").
 */
function resolveAlternatives(anyOf: ErrorObject, inner: ErrorObject[], branches?: Schema[]): ErrorObject[] {
  const byBranch = new Map<number, ErrorObject[]>()
  for (const error of inner) {
    const index = branchOf(error, anyOf)
    if (isNull(branches?.[index]) || (error.keyword === 'type' && error.params.type === 'null')) continue
    const list = byBranch.get(index)
    if (list) list.push(error)
    else byBranch.set(index, [error])
  }
  const candidates = [...byBranch.entries()]
  const plausible = candidates.filter(
    ([index, errors]) =>
      !errors.some(
        (error) => error.keyword === 'type' && error.schemaPath === `${anyOf.schemaPath}/${index}/type`,
      ),
  )
  const at = { instancePath: anyOf.instancePath, schemaPath: anyOf.schemaPath }
  if (candidates.length === 1 || plausible.length === 1) return (plausible[0] ?? candidates[0])?.[1] ?? []
  if (plausible.length === 0 && candidates.length > 0) {
    const types = new Set(
      candidates.flatMap(([, errors]) =>
        errors.flatMap((error) => (error.keyword === 'type' ? String(error.params.type).split(',') : [])),
      ),
    )
    types.delete('null')
    return [{ ...at, keyword: 'type', params: { type: [...types].join(',') } }]
  }
  return [{ ...at, keyword: 'anyOf', params: {} }]
}

/**
 * Ajv's errors (allErrors, verbose) with each failed anyOf resolved: a union of literals becomes one
 * problem with the allowed values (not one per literal); a Nullable reports its schema's problem,
 * not "must be null"; other unions go by resolveAlternatives. Ajv lists the errors of an anyOf's
 * branches right before the anyOf's own error, so each is resolved in place from the errors just
 * before it, in one pass over the list. Ajv's verbose `schema` of an anyOf is its branches.
 */
function resolved(errors: readonly ErrorObject[]): ErrorObject[] {
  const out: ErrorObject[] = []
  let size = 0
  for (const error of errors) {
    if (error.keyword !== 'anyOf') {
      out[size++] = error
      continue
    }
    const prefix = `${error.schemaPath}/`
    let start = size
    while (start > 0 && within(out[start - 1] as ErrorObject, error, prefix)) start--
    const branches = Array.isArray(error.schema) ? (error.schema as Schema[]) : undefined
    const shape = branches ? shapeOf(branches) : {}
    if (shape.allowedValues) {
      size = start
      out[size++] = { ...error, keyword: 'enum', params: { allowedValues: shape.allowedValues } }
    } else if (shape.soleBranch !== undefined) {
      let kept = start
      for (let index = start; index < size; index++) {
        const inner = out[index] as ErrorObject
        if (branchOf(inner, error) === shape.soleBranch) out[kept++] = inner
      }
      size = kept
    } else {
      const inner = out.slice(start, size)
      size = start
      for (const replacement of resolveAlternatives(error, inner, branches)) out[size++] = replacement
    }
  }
  out.length = size
  return out
}

/** The missing required members among Ajv's errors, each failed anyOf resolved first. */
export const missingMembers = (errors: readonly ErrorObject[]) =>
  resolved(errors).filter((error) => error.keyword === 'required')

const parentPath = (error: ErrorObject) => error.schemaPath.slice(0, error.schemaPath.lastIndexOf('/'))

const implies = (error: ErrorObject) =>
  error.keyword === 'enum' || error.keyword === 'const' || error.keyword === 'minLength'
const implied = (error: ErrorObject) =>
  error.keyword === 'type' || (error.keyword === 'pattern' && error.params.pattern === NOT_BLANK)

/**
 * Whether another error of the same schema at the same place already says it: the type of a value
 * outside an enum ("must be one of" says enough), the "not blank" of an empty Text ("must not be
 * empty" does). Ajv lists the errors of one schema together, so only neighbours are compared.
 */
function isImplied(errors: ErrorObject[], index: number): boolean {
  const error = errors[index] as ErrorObject
  if (!implied(error)) return false
  const parent = parentPath(error)
  for (const step of [-1, 1]) {
    for (let at = index + step; at >= 0 && at < errors.length; at += step) {
      const other = errors[at] as ErrorObject
      if (other.instancePath !== error.instancePath || parentPath(other) !== parent) break
      if (implies(other)) return true
    }
  }
  return false
}

/**
 * Every problem of a failed validation, in words: the first MAX_PROBLEMS, without duplicates, and
 * a count of the rest. Past the first few only counting is done (a huge array of bad items must
 * not cost a message each), so a rare duplicate among the rest counts too.
 */
export function describeProblems(errors: readonly ErrorObject[]): ValidationProblems {
  const problems: FieldProblem[] = []
  const seen = new Set<string>()
  let omitted = 0
  let missing = false
  const all = resolved(errors)
  for (let index = 0; index < all.length; index++) {
    const error = all[index] as ErrorObject
    if (isImplied(all, index)) continue
    if (error.keyword === 'required') missing = true
    if (problems.length === MAX_PROBLEMS) {
      omitted++
      continue
    }
    const problem = { path: pathOf(error), message: messageOf(error) }
    const key = `${problem.path}\u0000${problem.message}`
    if (seen.has(key)) continue
    seen.add(key)
    problems.push(problem)
  }
  return { problems, omitted, missing }
}

/** `identification.gender must be one of …; dateOfBirth must be …; … and 3 more`. */
export function problemsText({ problems, omitted }: ValidationProblems, whole: string): string {
  const sentences = problems.map(({ path, message }) => `${path || whole} ${message}`)
  if (omitted > 0) sentences.push(`… and ${omitted} more`)
  return sentences.join('; ')
}
