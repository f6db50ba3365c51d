import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import { ACCESS_TOKEN_TTL_SECONDS } from './token-lifetimes.js'

/**
 * The sessions ended (logout, password change or reset, refresh-token reuse, deactivation) while
 * their access tokens may still be unexpired, kept in memory and read again every `pollMs` from
 * the sessions table, which every instance shares: a request checks a token's `sid` against it with
 * no database read, and a revocation made on any instance reaches this one within `pollMs`.
 */
export class RevokedSessions {
  private readonly revoked = new Map<string, number>()
  private since = new Date(Date.now() - ACCESS_TOKEN_TTL_SECONDS * 1000)
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly db: Db,
    private readonly pollMs: number,
    private readonly onError: (error: Error) => void,
  ) {}

  has(sessionId: string): boolean {
    return this.revoked.has(sessionId)
  }

  /** Reads the revocations since the last read (with a second's overlap for clock and commit order). */
  async refresh(): Promise<void> {
    const rows = await this.db
      .selectFrom('sessions')
      .select(['id', 'revoked_at'])
      .where('revoked_at', '>=', sql<Date>`${this.since}::timestamptz - interval '1 second'`)
      .execute()
    const now = Date.now()
    for (const row of rows) {
      const at = (row.revoked_at as Date).getTime()
      this.revoked.set(row.id, at)
      if (at > this.since.getTime()) this.since = new Date(at)
    }
    // Tokens of sessions ended longer ago than a token lives have all expired.
    for (const [id, at] of this.revoked) {
      if (now - at > ACCESS_TOKEN_TTL_SECONDS * 1000) this.revoked.delete(id)
    }
  }

  async start(): Promise<void> {
    await this.refresh()
    this.timer = setInterval(() => {
      this.refresh().catch((error: Error) => this.onError(error))
    }, this.pollMs)
    this.timer.unref()
  }

  stop(): void {
    clearInterval(this.timer)
  }
}
