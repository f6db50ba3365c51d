import { describe, expect, it } from 'vitest'
import { backAfter, type ProbePair } from '../../../scripts/bench-sign-in-flood/recovery.js'

const bounds = { health: 3, list: 9 }
const pairs = (startedAt: number, count: number, pair: Omit<ProbePair, 'startedAt'>) =>
  Array.from({ length: count }, (_, i) => ({ startedAt: startedAt + i * 10, ...pair }))
const fast = { health: 1, list: 3, ok: true }

describe("the sign-in flood benchmark's recovery time (scripts/bench-sign-in-flood/recovery.ts)", () => {
  it('counts from the restore to the first of a run of pairs that answered 200 within bounds', () => {
    const timeline = [
      ...pairs(0, 5, { health: 1, list: 3, ok: false }),
      ...pairs(1000, 20, { health: 50, list: 90, ok: true }),
      ...pairs(1200, 12, fast),
    ]
    // The first run of ten with more fast pairs than slow ones starts with the last four slow ones.
    expect(backAfter(timeline, 1000, bounds, 10)).toBe(160)
  })

  it('is not back while a pair in the run failed, even if fast', () => {
    const timeline = [
      ...pairs(0, 5, fast),
      { startedAt: 50, health: 1, list: 3, ok: false },
      ...pairs(60, 9, fast),
    ]
    expect(backAfter(timeline, 0, bounds, 10)).toBeUndefined()
    expect(backAfter([...timeline, ...pairs(150, 1, fast)], 0, bounds, 10)).toBe(60)
  })

  it('takes a p50 over the run: single slow probes do not hold it back, a slow half does', () => {
    const mixed = (slowEvery: number) =>
      Array.from({ length: 10 }, (_, i) => ({
        startedAt: 5 + i * 10,
        ...(i % slowEvery === 0 ? { health: 20, list: 3, ok: true } : fast),
      }))
    expect(backAfter(mixed(5), 0, bounds, 10)).toBe(5)
    expect(backAfter(mixed(2), 0, bounds, 10)).toBeUndefined()
  })

  it('ignores pairs that started before the restore', () => {
    expect(backAfter([...pairs(0, 10, fast), ...pairs(500, 3, fast)], 400, bounds, 10)).toBeUndefined()
  })
})
