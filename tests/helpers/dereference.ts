type Json = unknown

/**
 * The document with every local `$ref` (`#/components/...`) replaced by what it points to, for
 * tests that walk operations and schemas directly. Members beside a `$ref` (a description) are kept.
 */
export function dereference<T>(document: T): T {
  const root = document as Record<string, Json>
  const resolving = new Set<string>()
  const target = (ref: string): Json => {
    const path = ref
      .replace(/^#\//, '')
      .split('/')
      .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    let node: Json = root
    for (const part of path) node = (node as Record<string, Json> | undefined)?.[part]
    if (node === undefined) throw new Error(`Unresolved reference ${ref}`)
    return node
  }
  const walk = (node: Json): Json => {
    if (Array.isArray(node)) return node.map(walk)
    if (typeof node !== 'object' || node === null) return node
    const { $ref, ...rest } = node as Record<string, Json>
    const own = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, walk(value)]))
    if (typeof $ref !== 'string' || !$ref.startsWith('#/')) return $ref === undefined ? own : { $ref, ...own }
    if (resolving.has($ref)) throw new Error(`Recursive reference ${$ref}`)
    resolving.add($ref)
    const resolved = walk(target($ref)) as Record<string, Json>
    resolving.delete($ref)
    return { ...resolved, ...own }
  }
  return walk(document) as T
}
