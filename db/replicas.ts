import { sql } from 'kysely'
import type { DatabaseHandle } from './connect.js'
import type { Db } from './database.js'
import { openPostgres } from './postgres.js'
import { formatLsn, parseLsn } from './wal-positions.js'

type ReplicaState = 'UP' | 'LAGGING' | 'DOWN'

interface ReplicaStatus {
  /** The replica's host and port (never its credentials). */
  name: string
  state: ReplicaState
  /** How long ago the primary was at a position this replica has not replayed yet (0: caught up). */
  lagSeconds: number
  /** The last position it was seen to have replayed. */
  replayed: string | null
}

export interface ReadReplicas {
  /**
   * Where a caller reads who has seen writes up to `after` (a WAL position, or none): a replica in
   * rotation that has replayed at least that far, else the primary.
   */
  readerFor(after: bigint | undefined): Db
  /** The primary's current WAL position: every write committed before the call is at or before it. */
  writePosition(): Promise<bigint>
  statuses(): ReplicaStatus[]
  close(): Promise<void>
}

export interface ReadReplicaOptions {
  primary: DatabaseHandle
  urls: string[]
  /** A replica further behind than this is out of rotation until it catches up. */
  maxLagMs: number
  checkIntervalMs: number
  poolMax: number
  statementTimeoutMs: number
  preparedStatements: number
}

interface Replica {
  name: string
  handle: DatabaseHandle
  state: ReplicaState
  replayed: bigint | undefined
  lagSeconds: number
}

const hostOf = (url: string) => {
  const { hostname, port } = new URL(url)
  return `${hostname}:${port || 5432}`
}

/**
 * Read replicas of the primary, checked every `checkIntervalMs`: each replica's replay position
 * against the primary's positions seen at earlier checks gives its lag in time (an idle primary
 * does not make a replica look behind). A replica that fails a check is DOWN, one lagging past
 * `maxLagMs` is LAGGING; both are out of rotation until a check finds them caught up.
 */
export function openReadReplicas(options: ReadReplicaOptions): ReadReplicas {
  const { primary } = options
  const replicas: Replica[] = options.urls.map((url) => ({
    name: hostOf(url),
    handle: openPostgres({
      url,
      poolMax: options.poolMax,
      preparedStatements: options.preparedStatements,
      statementTimeoutMs: options.statementTimeoutMs,
    }),
    // Out of rotation until the first check has seen it answer.
    state: 'DOWN',
    replayed: undefined,
    lagSeconds: 0,
  }))
  // A replica whose connection fails leaves the rotation at once, not at the next check.
  for (const replica of replicas)
    replica.handle.observe({
      query: () => {},
      connectionError: () => {
        replica.state = 'DOWN'
      },
    })
  /** The primary's positions at recent checks, oldest first, for replicas not yet past them. */
  const seen: { at: number; lsn: bigint }[] = []
  let turn = 0

  const currentPosition = async () => {
    const { rows } = await sql<{ lsn: string }>`select pg_current_wal_lsn()::text as lsn`.execute(primary.db)
    return parseLsn(rows[0]?.lsn ?? '') ?? 0n
  }

  async function checkReplica(replica: Replica, now: number) {
    try {
      const { rows } = await sql<{ replayed: string | null; recovering: boolean }>`
        select pg_last_wal_replay_lsn()::text as replayed, pg_is_in_recovery() as recovering`.execute(
        replica.handle.db,
      )
      const replayed = parseLsn(rows[0]?.replayed ?? '')
      if (!rows[0]?.recovering || replayed === undefined) throw new Error('not a replica')
      replica.replayed = replayed
      const behind = seen.find((position) => position.lsn > replayed)
      replica.lagSeconds = behind ? (now - behind.at) / 1000 : 0
      replica.state = replica.lagSeconds * 1000 > options.maxLagMs ? 'LAGGING' : 'UP'
    } catch {
      replica.state = 'DOWN'
    }
  }

  async function check() {
    const now = Date.now()
    try {
      seen.push({ at: now, lsn: await currentPosition() })
    } catch {
      // The primary's own outage is reported by the health check; replicas are judged on what was seen.
    }
    await Promise.all(replicas.map((replica) => checkReplica(replica, now)))
    const slowest = replicas.reduce<bigint | undefined>(
      (low, { replayed }) =>
        replayed !== undefined && (low === undefined || replayed < low) ? replayed : low,
      undefined,
    )
    // Positions every replica has replayed, and those older than the lag limit's reach, are not needed.
    while (
      seen.length > 1 &&
      ((slowest !== undefined && (seen[0] as { lsn: bigint }).lsn <= slowest) ||
        now - (seen[0] as { at: number }).at > options.maxLagMs * 10)
    )
      seen.shift()
  }

  let closed = false
  let timer: NodeJS.Timeout | undefined
  const schedule = () => {
    timer = setTimeout(async () => {
      await check()
      if (!closed) schedule()
    }, options.checkIntervalMs)
    timer.unref()
  }
  void check().then(() => {
    if (!closed) schedule()
  })

  return {
    readerFor(after) {
      const ready = replicas.filter(
        (replica) =>
          replica.state === 'UP' &&
          replica.replayed !== undefined &&
          (after === undefined || replica.replayed >= after),
      )
      if (ready.length === 0) return primary.db
      turn = (turn + 1) % ready.length
      return (ready[turn] as Replica).handle.db
    },
    writePosition: currentPosition,
    statuses: () =>
      replicas.map(({ name, state, lagSeconds, replayed }) => ({
        name,
        state,
        lagSeconds,
        replayed: replayed === undefined ? null : formatLsn(replayed),
      })),
    async close() {
      closed = true
      clearTimeout(timer)
      await Promise.all(replicas.map((replica) => replica.handle.close()))
    },
  }
}
