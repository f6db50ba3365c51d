import { readFileSync } from 'node:fs'
import type { TSchema } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { referenceFiles } from '../../scripts/docs/reference.js'
import { ConfigSchema } from '../../src/config.js'
import { ERRORS } from '../../src/errors.js'

const committed = (file: string) => {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

describe('docs/reference', () => {
  for (const { path, content } of referenceFiles()) {
    it(`${path} matches the code`, () => {
      expect(committed(path), `${path} is stale: run \`npm run docs\` and commit the result`).toBe(content)
    })
  }

  it('has a description for every configuration variable', () => {
    const undocumented = Object.entries(ConfigSchema.properties as Record<string, TSchema>)
      .filter(([, schema]) => !schema.description)
      .map(([name]) => name)
    expect(undocumented, 'add a `description` to these variables in their topic under src/config/').toEqual(
      [],
    )
  })

  it("lists each error code's usual status among its statuses", () => {
    for (const [code, { status, statuses }] of Object.entries(ERRORS)) {
      expect(statuses as readonly number[], code).toContain(status)
    }
  })
})
