import { describe, expect, it } from 'vitest'
import { AppError } from '../../../src/errors.js'
import { applyJsonPatch, type PatchOperation, patchOperations } from '../../../src/lib/json-patch.js'

const apply = (document: unknown, operations: unknown) =>
  applyJsonPatch(document, patchOperations(operations))

/** The field an error names, or a failure when nothing was thrown. */
function refusedAt(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    if (!(error instanceof AppError)) throw error
    return error.fields?.[0]?.path
  }
  throw new Error('applied')
}

describe('JSON Patch (RFC 6902)', () => {
  // The examples of RFC 6902 appendix A, each as the document, the patch and the result.
  const examples: [string, unknown, PatchOperation[], unknown][] = [
    [
      'adds an object member',
      { foo: 'bar' },
      [{ op: 'add', path: '/baz', value: 'qux' }],
      { foo: 'bar', baz: 'qux' },
    ],
    [
      'adds an array element',
      { foo: ['bar', 'baz'] },
      [{ op: 'add', path: '/foo/1', value: 'qux' }],
      { foo: ['bar', 'qux', 'baz'] },
    ],
    [
      'removes an object member',
      { baz: 'qux', foo: 'bar' },
      [{ op: 'remove', path: '/baz' }],
      { foo: 'bar' },
    ],
    [
      'removes an array element',
      { foo: ['bar', 'qux', 'baz'] },
      [{ op: 'remove', path: '/foo/1' }],
      { foo: ['bar', 'baz'] },
    ],
    [
      'replaces a value',
      { baz: 'qux', foo: 'bar' },
      [{ op: 'replace', path: '/baz', value: 'boo' }],
      { baz: 'boo', foo: 'bar' },
    ],
    [
      'moves a value',
      { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } },
      [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }],
      { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
    ],
    [
      'moves an array element',
      { foo: ['all', 'grass', 'cows', 'eat'] },
      [{ op: 'move', from: '/foo/1', path: '/foo/3' }],
      { foo: ['all', 'cows', 'eat', 'grass'] },
    ],
    [
      'adds a nested member object',
      { foo: 'bar' },
      [{ op: 'add', path: '/child', value: { grandchild: {} } }],
      { foo: 'bar', child: { grandchild: {} } },
    ],
    [
      'escapes ~ and / in pointers',
      { '/': 9, '~1': 10 },
      [{ op: 'test', path: '/~01', value: 10 }],
      { '/': 9, '~1': 10 },
    ],
    [
      'adds to the end of an array with -',
      { foo: ['bar'] },
      [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }],
      { foo: ['bar', ['abc', 'def']] },
    ],
    [
      'copies a value',
      { a: { b: 1 } },
      [{ op: 'copy', from: '/a', path: '/c' }],
      { a: { b: 1 }, c: { b: 1 } },
    ],
    [
      'tests equal objects whatever their member order',
      { a: { x: 1, y: 2 } },
      [{ op: 'test', path: '/a', value: { y: 2, x: 1 } }],
      { a: { x: 1, y: 2 } },
    ],
  ]
  for (const [name, document, operations, result] of examples) {
    it(name, () => {
      expect(apply(document, operations)).toEqual(result)
    })
  }

  it('leaves the document it was given as it was', () => {
    const document = { foo: { bar: 1 } }
    apply(document, [{ op: 'replace', path: '/foo/bar', value: 2 }])
    expect(document).toEqual({ foo: { bar: 1 } })
  })

  it('refuses what cannot apply, naming the operation', () => {
    expect(refusedAt(() => apply({ baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }]))).toBe('[0]')
    expect(refusedAt(() => apply({ foo: 'bar' }, [{ op: 'add', path: '/baz/bat', value: 'qux' }]))).toBe(
      '[0].path',
    )
    expect(refusedAt(() => apply({ foo: [] }, [{ op: 'remove', path: '/foo/0' }]))).toBe('[0].path')
    expect(refusedAt(() => apply({ foo: [1] }, [{ op: 'replace', path: '/foo/01', value: 2 }]))).toBe(
      '[0].path',
    )
    expect(refusedAt(() => apply({ a: 1 }, [{ op: 'remove', path: '/b' }]))).toBe('[0].path')
    expect(refusedAt(() => apply({ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }]))).toBe(
      '[0].path',
    )
    expect(refusedAt(() => apply({}, [{ op: 'add', path: 'a', value: 1 }]))).toBe('[0].path')
  })

  it('refuses a document that is not a list of operations', () => {
    expect(refusedAt(() => patchOperations({ op: 'add' }))).toBe('')
    expect(refusedAt(() => patchOperations([{ op: 'merge', path: '/a' }]))).toBe('[0].op')
    expect(refusedAt(() => patchOperations([{ op: 'add', path: '/a' }]))).toBe('[0].value')
    expect(refusedAt(() => patchOperations([{ op: 'copy', path: '/a' }]))).toBe('[0].from')
    expect(refusedAt(() => patchOperations([{ op: 'remove', path: 1 }]))).toBe('[0].path')
  })

  it('applies all operations or none', () => {
    const document = { a: 1 }
    expect(
      refusedAt(() =>
        apply(document, [
          { op: 'replace', path: '/a', value: 2 },
          { op: 'remove', path: '/b' },
        ]),
      ),
    ).toBe('[1].path')
    expect(document).toEqual({ a: 1 })
  })
})
