/** One pair of sequential probes: when it started (ms), how long each took, and whether both answered 200. */
export interface ProbePair {
  startedAt: number
  health: number
  list: number
  ok: boolean
}

export const median = (list: number[]) =>
  [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] as number

/**
 * How long after `restoredAt` the probes were back: until the first of `run` consecutive pairs, all
 * started after it and answered 200, over which each probe's p50 is within its bound (a p50, as the
 * flood's own target is one: under a flood single probes above the bound are common). Undefined
 * when no such run came.
 */
export function backAfter(
  pairs: ProbePair[],
  restoredAt: number,
  bounds: { health: number; list: number },
  run: number,
): number | undefined {
  const after = pairs.filter((pair) => pair.startedAt >= restoredAt)
  for (let first = 0; first + run <= after.length; first++) {
    const window = after.slice(first, first + run)
    const back =
      window.every((pair) => pair.ok) &&
      median(window.map((pair) => pair.health)) <= bounds.health &&
      median(window.map((pair) => pair.list)) <= bounds.list
    if (back) return (window[0] as ProbePair).startedAt - restoredAt
  }
  return undefined
}
