import { describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH, nestsDeeperThan, parseJsonBody } from '../../../src/http/json-body.js'

describe('nestsDeeperThan', () => {
  it.each([
    ['[[1]]', 2, false],
    ['[[[1]]]', 2, true],
    ['[{"a":[1]}, {"b":{}}]', 3, false],
    ['["[[[[", "\\"[[[["]', 1, false],
    ['["\\\\", [[1]]]', 2, true],
    ['{"a":1}{"b":[[2]]}', 2, true],
  ])('reads %s against a limit of %i as %s', (text, limit, expected) => {
    expect(nestsDeeperThan(text, limit)).toBe(expected)
  })
})

describe('parseJsonBody', () => {
  it('parses a body nested up to the limit and ignores a byte order mark', () => {
    const text = `${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`
    expect(parseJsonBody(`\ufeff${text}`)).toEqual(JSON.parse(text))
  })

  it('refuses a body one level deeper with VAL_001, before parsing it', () => {
    const text = '['.repeat(MAX_JSON_DEPTH + 1)
    expect(() => parseJsonBody(text)).toThrow(expect.objectContaining({ code: 'VAL_001', status: 400 }))
  })

  it('refuses an escaped prototype member as an unknown field', () => {
    expect(() => parseJsonBody('{"a":[{"\\u005f\\u005fproto__":{}}]}')).toThrow(
      expect.objectContaining({
        code: 'VAL_001',
        status: 422,
        fields: [{ path: 'a.0.__proto__', message: 'is not a known field' }],
      }),
    )
  })
})
