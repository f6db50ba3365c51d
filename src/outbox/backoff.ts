// Each delay varies by up to this fraction either way, so that deliveries which failed together
// (a receiver outage) do not all come back in the same second.
const JITTER = 0.2

/**
 * Seconds until the retry that follows failed attempt number `step` (0 for the first attempt), or
 * undefined when the schedule is exhausted and the delivery has failed for good.
 */
export function retryDelaySeconds(
  schedule: readonly number[],
  step: number,
  random: () => number = Math.random,
): number | undefined {
  const base = schedule[step]
  if (base === undefined) return undefined
  return base * (1 - JITTER + 2 * JITTER * random())
}
