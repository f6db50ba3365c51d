import { createHmac } from 'node:crypto'
import { AppError } from '../errors.js'
import type { Count } from './redis-window-counter.js'

/** The counters sign-in attempts are kept in: those of the rate limits (Redis, or this process). */
export interface AttemptCounters {
  count(key: string, windowMs: number, max: number): Count | Promise<Count>
  /** Takes one count of `key` back; never fails (a count it cannot take back stays spent). */
  takeBack(key: string): Promise<void>
}

export interface SignInLimits {
  /** Failures allowed per window for one account, from any address. */
  perAccount: number
  /** Failures allowed per window from one address, whatever the accounts. */
  perAddress: number
  windowMs: number
}

/** Which limit refused an attempt, and how long until its window ends. */
interface Refusal {
  limit: number
  retryAfterSeconds: number
}

export interface AttemptOptions {
  /** Whether the check's error is a credential failure (counted); any other error is not. */
  failed?: (error: unknown) => boolean
  /** Called before a refused attempt's 429 is thrown. */
  refused?: (refusal: Refusal) => void
}

/** A wrong password or an unknown account, as the sign-in endpoints answer them. */
const credentialFailure = (error: unknown) => error instanceof AppError && error.code === 'AUTH_001'

/**
 * Sign-in attempts limited by their failures, per account and per address (fixed windows).
 *
 * Each attempt is counted before its credentials are checked, so that attempts sent at once cannot
 * all pass a limit they exceed together, and its counts are taken back unless it fails: a correct
 * password, or a failure of the service, leaves no trace. The account is counted first; an attempt
 * its account's limit refuses is not counted for the address, so that one account hammered from a
 * shared address (a script with an old password) does not stop the colleagues behind it; failures
 * across many accounts (password spraying) do, at the address's higher ceiling.
 *
 * Accounts are counted under a keyed hash of the username, never the username itself (an e-mail).
 */
export function signInAttempts(counters: AttemptCounters, limits: SignInLimits, accountSecret: Buffer) {
  const accountKey = (username: string) =>
    `sign-in:account:${createHmac('sha256', accountSecret).update(username.toLowerCase()).digest('base64url')}`
  const takeBack = (keys: string[]) => Promise.all(keys.map((key) => counters.takeBack(key)))

  return async function attempt<T>(
    who: { address: string; username: string | undefined },
    check: () => Promise<T>,
    { failed = credentialFailure, refused }: AttemptOptions = {},
  ): Promise<T> {
    const limited = [
      ...(who.username === undefined
        ? []
        : [{ key: accountKey(who.username), max: limits.perAccount, of: 'this account' }]),
      { key: `sign-in:address:${who.address}`, max: limits.perAddress, of: 'this address' },
    ]
    const counted: string[] = []
    for (const { key, max, of } of limited) {
      const { current, ttl } = await counters.count(key, limits.windowMs, max)
      if (current > max) {
        await takeBack(counted)
        const retryAfterSeconds = Math.max(1, Math.ceil(ttl / 1000))
        refused?.({ limit: max, retryAfterSeconds })
        throw new AppError(
          'RATE_001',
          `Too many failed sign-ins for ${of}; retry in ${retryAfterSeconds} seconds`,
        )
      }
      counted.push(key)
    }
    let result: T
    try {
      result = await check()
    } catch (error) {
      if (!failed(error)) await takeBack(counted)
      throw error
    }
    await takeBack(counted)
    return result
  }
}
