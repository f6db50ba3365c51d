import { Ajv } from 'ajv'
import { describe, expect, it } from 'vitest'
import { serializersOnFirstUse, validatorOnFirstUse } from '../../../src/runtime/lazy-compile.js'

const schema = { type: 'object', properties: { age: { type: 'integer' } }, required: ['age'] }

describe('validatorOnFirstUse', () => {
  it('compiles on the first call only and reports the errors of a failed check', () => {
    const ajv = new Ajv()
    let compiles = 0
    const validate = validatorOnFirstUse(() => {
      compiles += 1
      return ajv.compile(schema)
    })
    expect(compiles).toBe(0)
    expect(validate({ age: 'old' })).toBe(false)
    expect(validate.errors?.[0]?.instancePath).toBe('/age')
    expect(validate({ age: 40 })).toBe(true)
    expect(validate.errors).toBeNull()
    expect(compiles).toBe(1)
  })
})

describe('serializersOnFirstUse', () => {
  it('serializes only the declared fields, as Fastify does', () => {
    const compile = serializersOnFirstUse({}, {})
    const serialize = compile({ schema, method: 'GET', url: '/x', httpStatus: '200' })
    expect(serialize({ age: 40, secret: 'never sent' })).toBe('{"age":40}')
  })
})
