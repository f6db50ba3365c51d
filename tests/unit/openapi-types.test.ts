import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { generateOpenApiTypes, OPENAPI_TYPES_FILE } from '../../scripts/openapi-types/generate.js'

describe(OPENAPI_TYPES_FILE, () => {
  it('is what openapi-typescript makes of the committed openapi.json (run npm run openapi)', async () => {
    const document = JSON.parse(await readFile('openapi.json', 'utf8'))
    const committed = await readFile(OPENAPI_TYPES_FILE, 'utf8')
    const fresh = await generateOpenApiTypes(document)
    // Compared by line, so a stale file shows the first differing lines, not a megabyte of text.
    const committedLines = committed.split('\n')
    const freshLines = fresh.split('\n')
    const first = freshLines.findIndex((line, index) => line !== committedLines[index])
    expect(
      first === -1 && committedLines.length === freshLines.length
        ? 'up to date'
        : `differs from line ${first + 1}: ${freshLines.slice(first, first + 3).join(' / ')}`,
    ).toBe('up to date')
  })

  it('types the routes: a path the API has, with its parameters', async () => {
    const types = await readFile(OPENAPI_TYPES_FILE, 'utf8')
    expect(types).toContain('"/api/patients/{patientId}/vitals": {')
    expect(types).toMatch(/listMessages: \{\s+parameters: \{\s+query\?: \{/)
  })
})
