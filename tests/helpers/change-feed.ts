/** Orders two change-feed positions, which compare as (transaction id, event id), both decimal. */
export function comparePositions(a: string, b: string): number {
  const [ax = 0n, ai = 0n] = a.split('-').map(BigInt)
  const [bx = 0n, bi = 0n] = b.split('-').map(BigInt)
  if (ax !== bx) return ax < bx ? -1 : 1
  return ai === bi ? 0 : ai < bi ? -1 : 1
}
