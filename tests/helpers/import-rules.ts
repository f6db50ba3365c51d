import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

/**
 * The dependency rules of the source tree, checked on its import graph. Layers, highest first:
 * the entry (server.ts, open-ahead.ts, start.ts, app.ts, areas.ts, bootstrap.ts) → the areas (src/modules/*) → the shared HTTP kit and
 * infrastructure (src/http, src/plugins, src/identity, src/outbox, src/audit, src/access,
 * src/scheduling) → the base (src/lib, src/runtime, src/config.ts and src/config/, src/errors.ts,
 * schemas, db). An import may only go down or stay in its
 * layer; an area reaches another area only through that area's service.ts; no file or folder may
 * take part in an import cycle.
 */
export type Sources = Map<string, string>

const ENTRY = new Set([
  'src/server.ts',
  'src/open-ahead.ts',
  'src/start.ts',
  'src/app.ts',
  'src/areas.ts',
  'src/bootstrap.ts',
])
const KIT = [
  'src/http/',
  'src/plugins/',
  'src/identity/',
  'src/outbox/',
  'src/audit/',
  'src/access/',
  'src/scheduling/',
]
const BASE = ['src/lib/', 'src/runtime/', 'src/config.ts', 'src/config/', 'src/errors.ts', 'schemas/', 'db/']

function rank(file: string): number {
  if (ENTRY.has(file)) return 4
  if (file.startsWith('src/modules/')) return 3
  if (KIT.some((prefix) => file.startsWith(prefix))) return 2
  if (BASE.some((prefix) => file.startsWith(prefix))) return 1
  throw new Error(`${file} belongs to no layer: add it to tests/helpers/import-rules.ts`)
}

const areaOf = (file: string) => (file.startsWith('src/modules/') ? file.split('/')[2] : undefined)

/** The folder a file counts in for folder cycles: its area, or its directory (a file of src/ alone). */
function folderOf(file: string): string {
  const area = areaOf(file)
  if (area) return `src/modules/${area}`
  const directory = path.posix.dirname(file)
  return directory === 'src' ? file : directory
}

const SPECIFIER = /(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g

/** Every relative import between the given files, as [importer, imported] paths. */
function importEdges(sources: Sources): [string, string][] {
  const edges: [string, string][] = []
  for (const [file, text] of sources) {
    for (const [, specifier = ''] of text.matchAll(SPECIFIER)) {
      const target = path.posix
        .normalize(path.posix.join(path.posix.dirname(file), specifier))
        .replace(/\.js$/, '.ts')
      if (sources.has(target)) edges.push([file, target])
    }
  }
  return edges
}

/** The groups of nodes that reach each other (strongly connected components of two or more). */
function cyclesOf(edges: [string, string][]): string[][] {
  const next = new Map<string, string[]>()
  for (const [from, to] of edges) {
    if (from === to) continue
    next.set(from, [...(next.get(from) ?? []), to])
    if (!next.has(to)) next.set(to, [])
  }
  // Tarjan's algorithm.
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const found: string[][] = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node) as number)
    stack.push(node)
    onStack.add(node)
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to)
        low.set(node, Math.min(low.get(node) as number, low.get(to) as number))
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node) as number, index.get(to) as number))
      }
    }
    if (low.get(node) === index.get(node)) {
      const group: string[] = []
      let member: string | undefined
      do {
        member = stack.pop() as string
        onStack.delete(member)
        group.push(member)
      } while (member !== node)
      if (group.length > 1) found.push(group.sort())
    }
  }
  for (const node of next.keys()) if (!index.has(node)) visit(node)
  return found
}

/** Every broken rule, one line each; empty when the tree keeps them all. */
export function ruleViolations(sources: Sources): string[] {
  const edges = importEdges(sources)
  const problems: string[] = []
  for (const [from, to] of edges) {
    const [fromArea, toArea] = [areaOf(from), areaOf(to)]
    if (rank(to) > rank(from)) problems.push(`${from} imports ${to}, a higher layer`)
    else if (fromArea && toArea && fromArea !== toArea && !to.endsWith('/service.ts'))
      problems.push(`${from} imports ${to}: another area is reached only through its service.ts`)
  }
  for (const cycle of cyclesOf(edges)) problems.push(`import cycle between files: ${cycle.join(', ')}`)
  const folderEdges = edges.map(([from, to]): [string, string] => [folderOf(from), folderOf(to)])
  for (const cycle of cyclesOf(folderEdges))
    problems.push(`import cycle between folders: ${cycle.join(', ')}`)
  return problems
}

/** The TypeScript sources of the service: src, schemas and db. */
export function serviceSources(root = '.'): Sources {
  const sources: Sources = new Map()
  const walk = (directory: string) => {
    for (const entry of readdirSync(path.join(root, directory), { withFileTypes: true })) {
      const relative = path.posix.join(directory, entry.name)
      if (entry.isDirectory()) walk(relative)
      else if (relative.endsWith('.ts'))
        sources.set(relative, readFileSync(path.join(root, relative), 'utf8'))
    }
  }
  for (const top of ['src', 'schemas', 'db']) walk(top)
  return sources
}
