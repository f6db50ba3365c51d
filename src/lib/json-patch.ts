import { invalidField } from '../errors.js'

/** One operation of a JSON Patch document (RFC 6902). */
export interface PatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test'
  path: string
  value?: unknown
  from?: string
}

const OPERATIONS: ReadonlySet<string> = new Set(['add', 'remove', 'replace', 'move', 'copy', 'test'])

type Container = Record<string, unknown> | unknown[]

/** The reference tokens of a JSON Pointer (RFC 6901); `where` names it in errors. */
function tokensOf(pointer: string, where: string): string[] {
  if (pointer === '') return []
  if (!pointer.startsWith('/')) throw invalidField(where, 'must be a JSON Pointer: empty, or starting with /')
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'))
}

const isContainer = (value: unknown): value is Container => typeof value === 'object' && value !== null

/** An array index token: `0` or digits without a leading zero (`-` only where an add appends). */
function indexOf(array: unknown[], token: string, where: string, appending: boolean): number {
  if (appending && token === '-') return array.length
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw invalidField(where, `${token} is not an array index`)
  const index = Number(token)
  if (index > array.length || (!appending && index === array.length)) {
    throw invalidField(where, `index ${token} is past the end of the array`)
  }
  return index
}

/** The container the last token of `tokens` is in, walking from `document`. */
function parentOf(document: unknown, tokens: string[], where: string): Container {
  let node = document
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(node)) node = node[indexOf(node, token, where, false)]
    else if (isContainer(node) && Object.hasOwn(node, token)) node = (node as Record<string, unknown>)[token]
    else throw invalidField(where, 'names a location that does not exist')
  }
  if (!isContainer(node)) throw invalidField(where, 'names a location that does not exist')
  return node
}

function valueAt(document: unknown, pointer: string, where: string): unknown {
  const tokens = tokensOf(pointer, where)
  if (tokens.length === 0) return document
  const parent = parentOf(document, tokens, where)
  const last = tokens.at(-1) as string
  if (Array.isArray(parent)) return parent[indexOf(parent, last, where, false)]
  if (!Object.hasOwn(parent, last)) throw invalidField(where, 'names a member that does not exist')
  return parent[last]
}

function removeAt(document: unknown, pointer: string, where: string): unknown {
  const tokens = tokensOf(pointer, where)
  if (tokens.length === 0) throw invalidField(where, 'cannot remove the whole document')
  const parent = parentOf(document, tokens, where)
  const last = tokens.at(-1) as string
  if (Array.isArray(parent)) return parent.splice(indexOf(parent, last, where, false), 1)[0]
  if (!Object.hasOwn(parent, last)) throw invalidField(where, 'names a member that does not exist')
  const removed = parent[last]
  delete parent[last]
  return removed
}

/** Adds `value` at `pointer`; returns the document (replaced as a whole by an empty pointer). */
function addAt(document: unknown, pointer: string, value: unknown, where: string): unknown {
  const tokens = tokensOf(pointer, where)
  if (tokens.length === 0) return value
  const parent = parentOf(document, tokens, where)
  const last = tokens.at(-1) as string
  if (Array.isArray(parent)) parent.splice(indexOf(parent, last, where, true), 0, value)
  else parent[last] = value
  return document
}

/** Deep equality of JSON values, as the `test` operation compares them (member order aside). */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => jsonEqual(item, b[index]))
    )
  }
  if (!isContainer(a) || !isContainer(b)) return false
  const keys = Object.keys(a)
  return (
    keys.length === Object.keys(b).length &&
    keys.every(
      (key) =>
        Object.hasOwn(b, key) &&
        jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
    )
  )
}

/** The operations of a JSON Patch body, checked for shape; each problem names the operation (`[2].path`). */
export function patchOperations(body: unknown): PatchOperation[] {
  if (!Array.isArray(body)) throw invalidField('', 'must be a JSON Patch document: an array of operations')
  return body.map((operation, index) => {
    const where = `[${index}]`
    if (!isContainer(operation) || Array.isArray(operation)) throw invalidField(where, 'must be an object')
    const { op, path, from } = operation as Record<string, unknown>
    if (typeof op !== 'string' || !OPERATIONS.has(op)) {
      throw invalidField(`${where}.op`, 'must be one of add, remove, replace, move, copy, test')
    }
    if (typeof path !== 'string') throw invalidField(`${where}.path`, 'must be a JSON Pointer')
    if ((op === 'move' || op === 'copy') && typeof from !== 'string') {
      throw invalidField(`${where}.from`, 'must be a JSON Pointer')
    }
    if ((op === 'add' || op === 'replace' || op === 'test') && !('value' in operation)) {
      throw invalidField(`${where}.value`, 'is required')
    }
    return operation as unknown as PatchOperation
  })
}

/**
 * Applies a JSON Patch (RFC 6902) to a copy of `document`: every operation in order, or none (a
 * failed `test` or a missing location is an error naming the operation).
 */
export function applyJsonPatch<T>(document: T, operations: readonly PatchOperation[]): T {
  let result: unknown = structuredClone(document)
  operations.forEach((operation, index) => {
    const where = `[${index}].path`
    const copyOf = (value: unknown) => structuredClone(value)
    switch (operation.op) {
      case 'add':
        result = addAt(result, operation.path, copyOf(operation.value), where)
        break
      case 'remove':
        removeAt(result, operation.path, where)
        break
      case 'replace':
        valueAt(result, operation.path, where)
        if (operation.path === '') result = copyOf(operation.value)
        else {
          removeAt(result, operation.path, where)
          result = addAt(result, operation.path, copyOf(operation.value), where)
        }
        break
      case 'move': {
        const from = operation.from as string
        if (operation.path.startsWith(`${from}/`)) {
          throw invalidField(where, 'cannot move a value into one of its own members')
        }
        const value = removeAt(result, from, `[${index}].from`)
        result = addAt(result, operation.path, value, where)
        break
      }
      case 'copy':
        result = addAt(
          result,
          operation.path,
          copyOf(valueAt(result, operation.from as string, `[${index}].from`)),
          where,
        )
        break
      case 'test':
        if (!jsonEqual(valueAt(result, operation.path, where), operation.value)) {
          throw invalidField(`[${index}]`, 'test failed: the value differs')
        }
        break
    }
  })
  return result as T
}
