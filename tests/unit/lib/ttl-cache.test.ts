import { afterEach, describe, expect, it, vi } from 'vitest'
import { TtlCache } from '../../../src/lib/ttl-cache.js'

describe('TtlCache', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('forgets entries after their time to live', () => {
    vi.useFakeTimers()
    const cache = new TtlCache<string, number>(1000, 10)
    cache.set('a', 1)
    vi.advanceTimersByTime(999)
    expect(cache.get('a')).toBe(1)
    vi.advanceTimersByTime(1)
    expect(cache.get('a')).toBeUndefined()
  })

  it('drops the oldest entry when full', () => {
    const cache = new TtlCache<string, number>(60_000, 2)
    cache.set('a', 1)
    cache.set('b', 2)
    cache.set('c', 3)
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3])
  })

  it('keeps an entry for a shorter time when asked, never for longer than the cache allows', () => {
    vi.useFakeTimers()
    const cache = new TtlCache<string, number>(1000, 10)
    cache.set('short', 1, 200)
    cache.set('long', 2, 5000)
    vi.advanceTimersByTime(200)
    expect(cache.get('short')).toBeUndefined()
    expect(cache.get('long')).toBe(2)
    vi.advanceTimersByTime(800)
    expect(cache.get('long')).toBeUndefined()
  })
})
