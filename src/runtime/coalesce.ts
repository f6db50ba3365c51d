interface Waiter<V> {
  resolve(value: V | undefined): void
  reject(error: unknown): void
}

/**
 * Lookups by key that are asked for in the same turn of the event loop, answered together: one
 * call of `fetchMany` per group (an organization, say) for all the keys asked for in it, made once
 * the turn's other work is done (setImmediate), so a lone lookup waits for nothing. Under load many
 * requests reach their lookup in the same turn, and one query answers them all.
 */
export function coalesced<G, K, V>(
  fetchMany: (group: G, keys: K[]) => Promise<Map<K, V>>,
): (group: G, key: K) => Promise<V | undefined> {
  let pending: Map<G, Map<K, Waiter<V>[]>> | undefined

  async function answer(group: G, waiting: Map<K, Waiter<V>[]>): Promise<void> {
    try {
      const found = await fetchMany(group, [...waiting.keys()])
      for (const [key, waiters] of waiting) for (const waiter of waiters) waiter.resolve(found.get(key))
    } catch (error) {
      for (const waiters of waiting.values()) for (const waiter of waiters) waiter.reject(error)
    }
  }

  function flush(): void {
    const groups = pending as Map<G, Map<K, Waiter<V>[]>>
    pending = undefined
    for (const [group, waiting] of groups) void answer(group, waiting)
  }

  return (group, key) =>
    new Promise((resolve, reject) => {
      if (!pending) {
        pending = new Map()
        setImmediate(flush)
      }
      let waiting = pending.get(group)
      if (!waiting) {
        waiting = new Map()
        pending.set(group, waiting)
      }
      const waiters = waiting.get(key)
      if (waiters) waiters.push({ resolve, reject })
      else waiting.set(key, [{ resolve, reject }])
    })
}
