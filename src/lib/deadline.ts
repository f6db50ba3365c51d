/**
 * `promise`, or a rejection with `error` once `ms` have passed without its answer. The verdict waits
 * for the poll phase of the event loop's turn: a timer that fires after the loop was kept busy past
 * the deadline runs before that turn reads its sockets, and an answer that arrived meanwhile is
 * read first instead of being taken for silence.
 */
export function withinDeadline<T>(promise: Promise<T>, ms: number, error: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => setImmediate(() => reject(error())), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (reason: unknown) => {
        clearTimeout(timer)
        reject(reason)
      },
    )
  })
}
