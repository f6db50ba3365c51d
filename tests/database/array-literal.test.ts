import { describe, expect, it } from 'vitest'
import { integerArrayLiteral, textArrayLiteral } from '../../db/array-literal.js'

describe('array literals', () => {
  it('quotes every text value and escapes quotes and backslashes', () => {
    expect(textArrayLiteral(['a', 'NULL', '', 'x,"y"\\z', null])).toBe(
      '{"a","NULL","","x,\\"y\\"\\\\z",NULL}',
    )
    expect(textArrayLiteral([])).toBe('{}')
  })

  it('writes integers bare and refuses anything else', () => {
    expect(integerArrayLiteral([1, null, -3, 2147483647])).toBe('{1,NULL,-3,2147483647}')
    expect(() => integerArrayLiteral([1.5])).toThrow(TypeError)
    expect(() => integerArrayLiteral([Number.NaN])).toThrow(TypeError)
  })
})
