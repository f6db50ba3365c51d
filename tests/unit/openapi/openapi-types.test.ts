import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateOpenApiTypes } from '../../../scripts/openapi-types/generate.js'
import { OPENAPI_DOCUMENT_FILE, writeOpenApiTypes } from '../../../scripts/openapi-types/write.js'

// That the typed client (scripts/client) and its callers compile against these types is what
// `npm run typecheck` checks, after generating them; tests/api/operations/smoke-walk.test.ts drives the client
// against the app.

let dir: string

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ehr-openapi-types-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

/** A one-operation document, quicker to generate than openapi.json. */
const tinyDocument = (route: string) => ({
  openapi: '3.1.0',
  info: { title: 'tiny', version: '1' },
  paths: { [route]: { get: { operationId: 'list', responses: { '204': { description: 'none' } } } } },
})

describe('npm run openapi:types (the typed client types, generated from openapi.json)', () => {
  it('types the routes of openapi.json: a path the API has, with its parameters', async () => {
    const types = await generateOpenApiTypes(JSON.parse(await readFile(OPENAPI_DOCUMENT_FILE, 'utf8')))
    expect(types).toContain('"/api/patients/{patientId}/vitals": {')
    // defaultNonNullable: false, so a query parameter with a default may be left out.
    expect(types).toMatch(/listMessages: \{\s+parameters: \{\s+query\?: \{/)
  })

  it('writes the file when it is missing or stale and leaves an up-to-date one alone', async () => {
    const document = path.join(dir, 'openapi.json')
    const types = path.join(dir, 'openapi.d.ts')
    await writeFile(document, JSON.stringify(tinyDocument('/things')))

    expect(await writeOpenApiTypes(document, types)).toBe(true)
    const first = await readFile(types, 'utf8')
    expect(first).toMatch(/^\/\*\*\n \* Generated from openapi.json/)
    expect(first).toContain('"/things": {')
    const written = (await stat(types)).mtimeMs

    expect(await writeOpenApiTypes(document, types)).toBe(false)
    expect((await stat(types)).mtimeMs).toBe(written)

    await writeFile(document, JSON.stringify(tinyDocument('/others')))
    expect(await writeOpenApiTypes(document, types)).toBe(true)
    expect(await readFile(types, 'utf8')).toContain('"/others": {')
  })
})
