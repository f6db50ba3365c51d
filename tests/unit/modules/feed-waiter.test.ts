import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, describe, expect, it } from 'vitest'
import { FeedWaiter } from '../../../src/modules/events/feed-waiter.js'

const POLL_MS = 10

/** A waiter over a mark the test sets, counting how often it is read. */
function fixture() {
  const state = { mark: 'event 1', reads: 0 }
  const waiter = new FeedWaiter(async () => {
    state.reads++
    return state.mark
  }, POLL_MS)
  waiters.push(waiter)
  return { state, waiter }
}

const waiters: FeedWaiter[] = []
afterEach(async () => {
  await Promise.all(waiters.splice(0).map((waiter) => waiter.close()))
})

const never = new AbortController().signal

describe('FeedWaiter', () => {
  it('wakes a watch for a change made after the watch began, before its first wait', async () => {
    const { state, waiter } = fixture()
    const watch = await waiter.watch()
    // The long poll's first read of the feed happens here and misses the new event.
    state.mark = 'event 2'
    const started = Date.now()
    expect(await watch.next(5000, never)).toBe(true)
    expect(Date.now() - started).toBeLessThan(2000)
    watch.end()
  })

  it('answers at once for a change it has not woken for yet, and only once', async () => {
    const { state, waiter } = fixture()
    const watch = await waiter.watch()
    state.mark = 'event 2'
    await expect.poll(() => state.reads, { timeout: 2000, interval: 5 }).toBeGreaterThan(3)
    const started = Date.now()
    expect(await watch.next(5000, never)).toBe(true)
    expect(Date.now() - started).toBeLessThan(1000)
    expect(await watch.next(100, never)).toBe(false)
    watch.end()
  })

  it('counts a mark the watch began at as old, however soon after a change it began', async () => {
    const { state, waiter } = fixture()
    const first = await waiter.watch()
    state.mark = 'event 2 pending'
    await expect.poll(() => first.next(0, never), { timeout: 2000, interval: 5 }).toBe(true)
    const second = await waiter.watch()
    expect(await second.next(100, never)).toBe(false)
    state.mark = 'event 2'
    expect(await first.next(5000, never)).toBe(true)
    expect(await second.next(5000, never)).toBe(true)
    first.end()
    second.end()
  })

  it('stops reading when the last watch ends, and starts again for a new one', async () => {
    const { state, waiter } = fixture()
    const first = await waiter.watch()
    expect(waiter.waiting).toBe(1)
    first.end()
    expect(waiter.waiting).toBe(0)
    await sleep(POLL_MS * 3)
    const readsWhenIdle = state.reads
    await sleep(POLL_MS * 5)
    expect(state.reads).toBe(readsWhenIdle)

    const second = await waiter.watch()
    expect(state.reads).toBeGreaterThan(readsWhenIdle)
    state.mark = 'event 2'
    expect(await second.next(5000, never)).toBe(true)
    second.end()
  })

  it('lets a wait end when its signal aborts, and ends every wait when it closes', async () => {
    const { waiter } = fixture()
    const watch = await waiter.watch()
    const caller = new AbortController()
    const aborted = watch.next(5000, caller.signal)
    caller.abort()
    expect(await aborted).toBe(false)

    const waiting = watch.next(5000, never)
    const started = Date.now()
    await waiter.close()
    expect(await waiting).toBe(false)
    expect(Date.now() - started).toBeLessThan(1000)
    expect(await (await waiter.watch()).next(5000, never)).toBe(false)
  })

  it('survives a failed read and wakes for the next change it sees', async () => {
    let fail = false
    let mark = 'event 1'
    const waiter = new FeedWaiter(async () => {
      if (fail) throw new Error('connection lost')
      return mark
    }, POLL_MS)
    waiters.push(waiter)
    const watch = await waiter.watch()
    fail = true
    await sleep(POLL_MS * 3)
    fail = false
    mark = 'event 2'
    expect(await watch.next(5000, never)).toBe(true)
    watch.end()
  })
})
