import { createHash } from 'node:crypto'
import { readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..', '..')

/** The reviewed contract the types are generated from. */
export const OPENAPI_DOCUMENT_FILE = path.join(root, 'openapi.json')
/** Where the generated types live (not committed); scripts/client builds the typed client on them. */
export const OPENAPI_TYPES_FILE = path.join(root, 'scripts', 'client', 'openapi.d.ts')

/**
 * What the output depends on: the document, the generator's options and the pinned versions of
 * openapi-typescript and its TypeScript. A file whose header names the same digest is up to date.
 */
async function sourceDigest(documentText: string): Promise<string> {
  const hash = createHash('sha256').update(documentText)
  for (const file of ['generate.ts', 'package.json']) {
    hash.update(await readFile(path.join(import.meta.dirname, file)))
  }
  return `sha256:${hash.digest('hex')}`
}

const header = (digest: string) => `/**
 * Generated from openapi.json by openapi-typescript (npm run openapi:types; npm run typecheck and
 * npm run build run it first). Not committed: do not edit.
 * source: ${digest}
 */

`

/**
 * Writes the TypeScript types of the document unless the file already holds those of the same
 * document, generator and versions. Returns whether it wrote the file.
 */
export async function writeOpenApiTypes(
  documentFile = OPENAPI_DOCUMENT_FILE,
  typesFile = OPENAPI_TYPES_FILE,
): Promise<boolean> {
  const documentText = await readFile(documentFile, 'utf8')
  const digest = await sourceDigest(documentText)
  const existing = await readFile(typesFile, 'utf8').catch(() => '')
  if (existing.startsWith(header(digest))) return false
  // Loaded only when there is something to generate: it brings TypeScript 5 with it, slow to load.
  const { generateOpenApiTypes } = await import('./generate.js')
  const types = header(digest) + (await generateOpenApiTypes(JSON.parse(documentText)))
  // Renamed into place, so a reader never sees half a file.
  const partial = `${typesFile}.${process.pid}.tmp`
  await writeFile(partial, types)
  await rename(partial, typesFile)
  return true
}
