import { invalidField } from '../../../errors.js'

// A few minutes of clock skew between a device and the server is not a future measurement.
const CLOCK_SKEW_MS = 5 * 60_000

/** An optional ISO time, not in the future; defaults to now. */
export function pastInstant(value: string | undefined, field: string): Date {
  if (value === undefined) return new Date()
  const instant = new Date(value)
  if (instant.getTime() > Date.now() + CLOCK_SKEW_MS) throw invalidField(field, 'must not be in the future')
  return instant
}

const today = () => new Date(Date.now() + 14 * 3600_000).toISOString().slice(0, 10)

export function pastDate(value: string | null | undefined, field: string): string | null {
  if (!value) return null
  if (value > today()) throw invalidField(field, 'must not be in the future')
  return value
}

export function notBefore(
  later: string | null,
  earlier: string | null,
  laterField: string,
  earlierField: string,
) {
  if (later && earlier && later < earlier)
    throw invalidField(laterField, `must not be before ${earlierField}`)
}

export const orNull = <T>(value: T | null | undefined): T | null => (value === undefined ? null : value)
