/** A small in-memory map whose entries expire; the oldest entry goes first when it is full. */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expiresAt: number }>()

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(key)
      return undefined
    }
    return entry.value
  }

  /** Stores `value` for the cache's lifetime, or for `ttlMs` when that is shorter. */
  set(key: K, value: V, ttlMs = this.ttlMs): void {
    this.entries.delete(key)
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next()
      if (!oldest.done) this.entries.delete(oldest.value)
    }
    this.entries.set(key, { value, expiresAt: Date.now() + Math.min(ttlMs, this.ttlMs) })
  }

  delete(key: K): void {
    this.entries.delete(key)
  }
}
