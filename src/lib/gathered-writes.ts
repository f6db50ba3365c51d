/** A write of many items in one call (one statement of many rows): its result for each, in order. */
type Many<H, T, R> = (handle: H, items: readonly T[]) => Promise<readonly R[]>

/** Consecutive writes through one `many`, and their callers waiting for their results. */
interface Batch {
  many: Many<object, unknown, unknown>
  items: unknown[]
  callers: { resolve(result: unknown): void; reject(error: unknown): void }[]
}

/** The writes gathered on a handle, and who is told when the next one comes. */
interface Gathered {
  batches: Batch[]
  onJoin: (() => void) | undefined
}

const gatheredOn = new WeakMap<object, Gathered>()

/**
 * A write of one item through `many`: made at once, alone, unless a gathering is open on its handle
 * (openGathering); then it waits there to be made with the other items gathered, in one call.
 */
export function gatheredWrite<H extends object, T, R>(
  many: Many<H, T, R>,
): (handle: H, item: T) => Promise<R> {
  return async (handle, item) => {
    const gathered = gatheredOn.get(handle)
    if (!gathered) return (await many(handle, [item]))[0] as R
    let batch = gathered.batches.at(-1)
    if (batch?.many !== many) {
      batch = { many: many as Batch['many'], items: [], callers: [] }
      gathered.batches.push(batch)
    }
    const { items, callers } = batch
    const result = new Promise<R>((resolve, reject) =>
      callers.push({ resolve: resolve as (result: unknown) => void, reject }),
    )
    items.push(item)
    gathered.onJoin?.()
    gathered.onJoin = undefined
    return result
  }
}

/**
 * Gathers the writes made through `handle` (gatheredWrite) until `flush`: each caller waits at its
 * write, which is then made with the others through the same `many` in one call, in the order they
 * came, and goes on with its own result (or the call's failure).
 */
export function openGathering(handle: object) {
  const gathered: Gathered = { batches: [], onJoin: undefined }
  gatheredOn.set(handle, gathered)
  const close = () => {
    if (gatheredOn.get(handle) === gathered) gatheredOn.delete(handle)
  }
  return {
    /** Resolves once the next write joins the gathering. */
    joined: () =>
      new Promise<void>((resolve) => {
        gathered.onJoin = resolve
      }),

    /**
     * Closes the gathering (writes from then on are made alone, a caller's next one too) and makes
     * the writes gathered; whether every call succeeded. A failed call fails its callers and those
     * of the calls after it, which are not made.
     */
    async flush(): Promise<boolean> {
      close()
      for (const [position, { many, items, callers }] of gathered.batches.entries()) {
        let results: readonly unknown[]
        try {
          results = await many(handle, items)
        } catch (error) {
          for (const failed of gathered.batches.slice(position)) {
            for (const caller of failed.callers) caller.reject(error)
          }
          return false
        }
        for (const [index, caller] of callers.entries()) caller.resolve(results[index])
      }
      return true
    },

    /** Closes the gathering without making its writes (their transaction fails). */
    close,
  }
}

export type Gathering = ReturnType<typeof openGathering>
