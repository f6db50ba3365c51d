import { preconditionFailed } from '../errors.js'

/**
 * The version a conditional write expects (from `If-Match`), or undefined for an unconditional
 * one. Callers check it while holding the row, so check and write are one atomic step.
 */
export type ExpectedVersion = number | undefined

/** Refuses the write (412) when the record is no longer at the version the client read. */
export function assertVersion(current: number, expected: ExpectedVersion): void {
  if (expected !== undefined && current !== expected) throw preconditionFailed(current)
}
