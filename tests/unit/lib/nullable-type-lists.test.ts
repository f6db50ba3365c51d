import { Type } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { Nullable } from '../../../schemas/common.js'
import { withNullableTypeLists } from '../../../src/lib/nullable-type-lists.js'
import { serializersOnFirstUse } from '../../../src/runtime/lazy-compile.js'

const Address = Type.Object({ city: Nullable(Type.String()) })
const Person = Type.Object({
  name: Type.String(),
  email: Nullable(Type.String({ format: 'email', title: 'Email' })),
  deletedAt: Nullable(Type.String({ format: 'date-time' })),
  visits: Nullable(Type.Integer()),
  address: Nullable(Address),
  tags: Nullable(Type.Array(Type.String())),
  either: Type.Union([Type.String(), Type.Integer()]),
})

describe('withNullableTypeLists', () => {
  it('turns each "T or null" into T with a type list, at any depth, keeping T’s keywords', () => {
    const converted = withNullableTypeLists(Person) as unknown as {
      properties: Record<string, Record<string, unknown>>
    }
    expect(converted.properties.email).toMatchObject({
      type: ['string', 'null'],
      format: 'email',
      title: 'Email',
    })
    expect(converted.properties.email).not.toHaveProperty('anyOf')
    expect(converted.properties.visits).toMatchObject({ type: ['integer', 'null'] })
    expect(converted.properties.address).toMatchObject({
      type: ['object', 'null'],
      properties: { city: { type: ['string', 'null'] } },
    })
    expect(converted.properties.tags).toMatchObject({ type: ['array', 'null'], items: { type: 'string' } })
  })

  it('leaves other unions and the original schema alone', () => {
    const converted = withNullableTypeLists(Person) as unknown as {
      properties: Record<string, Record<string, unknown>>
    }
    expect(converted.properties.either).toEqual({ anyOf: [{ type: 'string' }, { type: 'integer' }] })
    expect(Person.properties.email).toHaveProperty('anyOf')
  })

  it('serializes the same JSON as the union would', () => {
    const compile = serializersOnFirstUse({}, {})
    const serialize = compile({ schema: Person, method: 'GET', url: '/x', httpStatus: '200' })
    const full = {
      name: 'Ann',
      email: 'ann@example.com',
      deletedAt: new Date('2026-01-02T03:04:05.678Z'),
      visits: 3,
      address: { city: 'Oslo' },
      tags: ['a'],
      either: 7,
    }
    const empty = {
      name: 'Bo',
      email: null,
      deletedAt: null,
      visits: null,
      address: null,
      tags: null,
      either: 'x',
    }
    expect(JSON.parse(serialize(full))).toEqual({ ...full, deletedAt: '2026-01-02T03:04:05.678Z' })
    expect(JSON.parse(serialize(empty))).toEqual(empty)
  })
})
