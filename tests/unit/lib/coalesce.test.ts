import { describe, expect, it } from 'vitest'
import { coalesced } from '../../../src/runtime/coalesce.js'

/** A lookup over a fixed table that records every call it receives. */
function recordingLookup(table: Record<string, Record<number, string>>) {
  const calls: [string, number[]][] = []
  const lookup = coalesced(async (group: string, keys: number[]) => {
    calls.push([group, keys])
    const rows = table[group] ?? {}
    return new Map(keys.flatMap((key) => (rows[key] ? [[key, rows[key]] as const] : [])))
  })
  return { lookup, calls }
}

describe('coalesced', () => {
  it('answers the lookups of one turn with one call per group, each key asked once', async () => {
    const { lookup, calls } = recordingLookup({ a: { 1: 'a1', 2: 'a2' }, b: { 1: 'b1' } })
    const answers = await Promise.all([lookup('a', 1), lookup('b', 1), lookup('a', 2), lookup('a', 1)])
    expect(answers).toEqual(['a1', 'b1', 'a2', 'a1'])
    expect(calls).toEqual([
      ['a', [1, 2]],
      ['b', [1]],
    ])
  })

  it('answers undefined for a key the group does not have, though another group has it', async () => {
    const { lookup } = recordingLookup({ a: { 1: 'a1' }, b: { 2: 'b2' } })
    expect(await Promise.all([lookup('a', 2), lookup('b', 2)])).toEqual([undefined, 'b2'])
  })

  it('makes a separate call for lookups of a later turn', async () => {
    const { lookup, calls } = recordingLookup({ a: { 1: 'a1', 2: 'a2' } })
    expect(await lookup('a', 1)).toBe('a1')
    expect(await lookup('a', 2)).toBe('a2')
    expect(calls).toEqual([
      ['a', [1]],
      ['a', [2]],
    ])
  })

  it("rejects every lookup of a group whose call fails, and only that group's", async () => {
    const lookup = coalesced(async (group: string, keys: number[]) => {
      if (group === 'down') throw new Error('database unavailable')
      return new Map(keys.map((key) => [key, `${group}${key}`]))
    })
    const answers = await Promise.allSettled([lookup('down', 1), lookup('up', 1), lookup('down', 2)])
    expect(answers.map((answer) => answer.status)).toEqual(['rejected', 'fulfilled', 'rejected'])
    expect((answers[0] as PromiseRejectedResult).reason.message).toBe('database unavailable')
    expect((answers[1] as PromiseFulfilledResult<string>).value).toBe('up1')
  })
})
