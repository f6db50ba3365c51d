import { Type } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { Nullable } from '../../../schemas/common.js'
import { applyMergePatch, projectOnto } from '../../../src/lib/merge-patch.js'

describe('applyMergePatch', () => {
  // RFC 7396, Appendix A: every example, as original, patch, result.
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('merges %j with %j into %j (RFC 7396 Appendix A)', (original, patch, result) => {
    expect(applyMergePatch(original, patch)).toEqual(result)
  })

  it('leaves the target and the patch unchanged', () => {
    const target = { a: { b: 'c', d: ['e'] }, f: 1 }
    const patch = { a: { b: null, g: { h: 2 } }, f: null }
    const targetBefore = structuredClone(target)
    const patchBefore = structuredClone(patch)
    expect(applyMergePatch(target, patch)).toEqual({ a: { d: ['e'], g: { h: 2 } } })
    expect(target).toEqual(targetBefore)
    expect(patch).toEqual(patchBefore)
  })

  it('returns an empty patch’s target as it was', () => {
    expect(applyMergePatch({ a: { b: [1, 2] } }, {})).toEqual({ a: { b: [1, 2] } })
  })
})

describe('projectOnto', () => {
  const Body = Type.Object(
    {
      name: Type.String(),
      nickname: Type.Optional(Type.String()),
      contact: Type.Optional(
        Type.Object({ email: Type.Optional(Type.String()), phone: Type.Optional(Type.String()) }),
      ),
      address: Nullable(Type.Object({ city: Type.String(), zip: Type.Optional(Type.String()) })),
      tags: Type.Array(Type.Object({ code: Type.String() })),
    },
    { additionalProperties: false },
  )

  it('keeps the members the body declares and drops read-only ones', () => {
    const record = {
      id: 7,
      version: 3,
      createdAt: '2026-01-01T00:00:00.000Z',
      name: 'Ana',
      nickname: 'A',
      contact: { email: 'a@example.org', phone: '+1 555 0100' },
      address: { city: 'Lund', zip: '22100' },
      tags: [{ code: 'x' }],
    }
    expect(projectOnto(Body, record)).toEqual({
      name: 'Ana',
      nickname: 'A',
      contact: { email: 'a@example.org', phone: '+1 555 0100' },
      address: { city: 'Lund', zip: '22100' },
      tags: [{ code: 'x' }],
    })
  })

  it('leaves out nulls, at the top and nested', () => {
    const record = {
      name: 'Ana',
      nickname: null,
      contact: { email: null, phone: '1' },
      address: null,
      tags: [],
    }
    expect(projectOnto(Body, record)).toEqual({ name: 'Ana', contact: { phone: '1' }, tags: [] })
  })

  it('projects the items of arrays and the object of a nullable union', () => {
    const record = {
      name: 'Ana',
      address: { city: 'Lund', zip: null, country: 'SE' },
      tags: [
        { code: 'x', label: 'X' },
        { code: 'y', label: 'Y' },
      ],
    }
    expect(projectOnto(Body, record)).toEqual({
      name: 'Ana',
      address: { city: 'Lund' },
      tags: [{ code: 'x' }, { code: 'y' }],
    })
  })

  it('gives a body that a merge patch and the body schema accept together', () => {
    const record = {
      id: 1,
      name: 'Ana',
      contact: { email: 'a@example.org', phone: '1' },
      tags: [],
      version: 2,
    }
    const merged = applyMergePatch(projectOnto(Body, record), { contact: { email: null } })
    expect(merged).toEqual({ name: 'Ana', contact: { phone: '1' }, tags: [] })
  })
})
