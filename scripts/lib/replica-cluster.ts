import { execFile, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { appendFile, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'

/** A throwaway PostgreSQL primary with a streaming hot-standby replica, in a temp dir on loopback. */
export interface ReplicaCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres (trust authentication on loopback) */
  primaryUrl: string
  replicaUrl: string
  /** The temp dir holding both data dirs, their sockets and their logs. */
  directory: string
  /** Pauses WAL replay on the replica and waits until it is paused. */
  pauseReplay(): Promise<void>
  resumeReplay(): Promise<void>
  /** Stops the replica (`pg_ctl stop -m fast`); connections to it are refused until startReplica. */
  stopReplica(): Promise<void>
  startReplica(): Promise<void>
  /** Waits until the replica has replayed the primary's current WAL position (bounded). */
  waitForCatchUp(timeoutMs?: number): Promise<void>
  /** Stops both servers and removes the temp dir; safe to call twice. */
  destroy(): Promise<void>
}

const requiredBinaries = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres']
// A bound for each step after start-up (a restart, a pause); start-up has its own, overall, bound.
const stepTimeoutMs = 30_000
const logTailLines = 30

let binariesCache: string | null | undefined

/**
 * The directory of the PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup, postgres): the
 * highest version under /usr/lib/postgresql (Debian's layout), else `pg_config --bindir`.
 */
function postgresBinaries(): string | undefined {
  if (binariesCache !== undefined) return binariesCache ?? undefined
  const complete = (dir: string) => requiredBinaries.every((name) => existsSync(path.join(dir, name)))
  const candidates: string[] = []
  const debianRoot = '/usr/lib/postgresql'
  if (existsSync(debianRoot)) {
    const versions = readdirSync(debianRoot)
      .filter((name) => /^\d+(\.\d+)?$/.test(name))
      .sort((a, b) => Number(b) - Number(a))
    candidates.push(...versions.map((version) => path.join(debianRoot, version, 'bin')))
  }
  const pgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8', timeout: 5_000 })
  if (pgConfig.status === 0 && pgConfig.stdout.trim()) candidates.push(pgConfig.stdout.trim())
  binariesCache = candidates.find(complete) ?? null
  return binariesCache ?? undefined
}

/** initdb and postgres refuse to run as root: as root, they run as the `postgres` system user. */
function runAs(): string[] {
  if (process.getuid?.() !== 0) return []
  const runuser = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((file) => existsSync(file))
  if (!runuser) throw new Error('running as root, but runuser (util-linux) was not found')
  return [runuser, '-u', 'postgres', '--']
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (!address || typeof address === 'string') throw new Error('could not find a free port')
  return address.port
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function urlFor(port: number): string {
  return `postgres://postgres@127.0.0.1:${port}/postgres`
}

/** Runs one query on a fresh connection, every wait bounded by timeoutMs. */
async function queryOnce<T extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
  timeoutMs = 5_000,
): Promise<T[]> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  })
  // A server stopping under an open connection must not become an uncaught 'error' event.
  client.on('error', () => {})
  try {
    await client.connect()
    return (await client.query<T>(text, values)).rows
  } finally {
    await client.end().catch(() => {})
  }
}

/**
 * Starts a primary and a streaming replica of it (pg_basebackup), each on a free loopback port, and
 * returns once the replica is in recovery and sees a row written on the primary. Every step is
 * bounded by options.timeoutMs overall; on failure both servers are stopped, the temp dir removed,
 * and the error carries the last lines of the server logs.
 */
export async function startReplicaCluster(options: { timeoutMs?: number } = {}): Promise<ReplicaCluster> {
  const bin = postgresBinaries()
  if (!bin) throw new Error('PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) not found')
  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  const prefix = runAs()
  const owner = prefix.length > 0 ? postgresUser() : undefined
  const directory = await mkdtemp(path.join(tmpdir(), 'replica-cluster-'))
  const primaryDir = path.join(directory, 'primary')
  const replicaDir = path.join(directory, 'replica')
  const primaryLog = path.join(directory, 'primary.log')
  const replicaLog = path.join(directory, 'replica.log')
  // Libpq variables of the caller's environment (PGHOST, PGSSLMODE…) must not steer our tools.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('PG')))

  const run = (tool: string, args: string[], timeoutMs: number) =>
    new Promise<string>((resolve, reject) => {
      const [command, ...rest] = [...prefix, path.join(bin, tool), ...args]
      execFile(
        command as string,
        rest,
        // cwd: the postgres user may not be allowed into the caller's working directory.
        { cwd: directory, env, timeout: Math.max(1, timeoutMs), encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (error) {
            const reason = error.killed ? `timed out after ${timeoutMs} ms` : `failed (${error.message})`
            reject(new Error(`${tool} ${reason}\n${stderr}${stdout}`.trimEnd()))
          } else resolve(stdout)
        },
      )
    })

  const remaining = (step: string) => {
    const left = deadline - Date.now()
    if (left <= 0) throw new Error(`replica cluster did not start in time (at: ${step})`)
    return left
  }

  const pgCtl = async (args: string[], timeoutMs: number) => {
    const seconds = Math.max(1, Math.ceil(timeoutMs / 1000))
    await run('pg_ctl', [...args, '-w', '-t', String(seconds)], timeoutMs + 5_000)
  }

  const stopServer = async (dataDir: string, mode: 'fast' | 'immediate', timeoutMs: number) => {
    if (!existsSync(path.join(dataDir, 'postmaster.pid'))) return
    await pgCtl(['stop', '-D', dataDir, '-m', mode], timeoutMs)
  }

  /** Starts a server on a fresh free port, choosing another when someone else took it meanwhile. */
  const startOnFreePort = async (dataDir: string, logFile: string): Promise<number> => {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      // The last setting in the file wins, so a retry simply appends another.
      await appendFile(path.join(dataDir, 'postgresql.conf'), `port = ${port}\n`)
      try {
        await pgCtl(['start', '-D', dataDir, '-l', logFile], remaining('start'))
        return port
      } catch (error) {
        const log = await tail(logFile)
        if (attempt < 5 && /could not bind|Address already in use|could not create any TCP\/IP/i.test(log)) {
          continue
        }
        throw error
      }
    }
  }

  const logs = async () => {
    const parts = []
    for (const [name, file] of [
      ['primary', primaryLog],
      ['replica', replicaLog],
    ]) {
      const text = await tail(file as string)
      if (text) parts.push(`--- ${name} log (last lines) ---\n${text}`)
    }
    return parts.join('\n')
  }

  /** Whether a server runs on the data dir (pg_ctl status exits with 3 when none does). */
  const running = (dataDir: string) =>
    run('pg_ctl', ['status', '-D', dataDir], stepTimeoutMs).then(
      () => true,
      (error: Error) => !/exited with code 3|no server running/i.test(error.message),
    )

  /** Stops both servers; a server still running afterwards is an error (it would outlive the tests). */
  const stopAll = async () => {
    const failures: string[] = []
    await Promise.all(
      [replicaDir, primaryDir].map(async (dataDir) => {
        // Immediate: both data dirs are about to be deleted, so there is nothing to shut down cleanly.
        const stopped = await stopServer(dataDir, 'immediate', stepTimeoutMs).then(
          () => undefined,
          (error: Error) => error,
        )
        // A server that crashed leaves its pid file behind, and pg_ctl stop then fails harmlessly.
        if (stopped && (await running(dataDir))) failures.push(stopped.message)
      }),
    )
    if (failures.length > 0) throw new Error(`could not stop the cluster:\n${failures.join('\n')}`)
  }

  // A test process that exits without destroy() must not leave servers running on the machine.
  const onExit = () => {
    for (const dataDir of [replicaDir, primaryDir]) {
      if (!existsSync(path.join(dataDir, 'postmaster.pid'))) continue
      const [command, ...rest] = [
        ...prefix,
        path.join(bin, 'pg_ctl'),
        'stop',
        '-D',
        dataDir,
        '-m',
        'immediate',
        '-w',
        '-t',
        '10',
      ]
      spawnSync(command as string, rest, { cwd: directory, env, stdio: 'ignore', timeout: 15_000 })
    }
    rmSync(directory, { recursive: true, force: true })
  }
  process.once('exit', onExit)

  let destroying: Promise<void> | undefined
  const destroy = () => {
    destroying ??= (async () => {
      try {
        await stopAll()
      } finally {
        await rm(directory, { recursive: true, force: true })
        process.removeListener('exit', onExit)
      }
    })()
    return destroying
  }

  let primaryPort: number
  let replicaPort: number
  try {
    if (owner) await chown(directory, owner.uid, owner.gid)
    await run(
      'initdb',
      [
        '-D',
        primaryDir,
        '-A',
        'trust',
        '-U',
        'postgres',
        '--no-sync',
        '--no-instructions',
        '--encoding=UTF8',
        '--locale=C',
        // 1 MB WAL segments instead of 16: initdb and pg_basebackup write (zero-filled) segments
        // whole, and the smaller ones save a few hundred milliseconds of start-up.
        '--wal-segsize=1',
      ],
      remaining('initdb'),
    )
    await appendFile(
      path.join(primaryDir, 'postgresql.conf'),
      [
        '',
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${directory}'`,
        'max_connections = 40',
        'shared_buffers = 16MB',
        'wal_level = replica',
        'max_wal_senders = 4',
        'max_replication_slots = 4',
        'hot_standby = on',
        // Disposable clusters: durability only costs time. synchronous_commit stays on: with fsync
        // off it costs a write() and nothing more, and it puts a committed write at or before
        // pg_current_wal_lsn(), which is what waitForCatchUp waits for.
        'fsync = off',
        'full_page_writes = off',
        'synchronous_commit = on',
        // Nothing lives long enough to need vacuuming; two cores are better spent on the tests.
        'autovacuum = off',
        // Reconnects quickly after the replica or the primary comes back.
        'wal_retrieve_retry_interval = 200ms',
        '',
      ].join('\n'),
    )
    await writeFile(
      path.join(primaryDir, 'pg_hba.conf'),
      [
        'local all all trust',
        'local replication all trust',
        'host all all 127.0.0.1/32 trust',
        'host replication all 127.0.0.1/32 trust',
        '',
      ].join('\n'),
    )
    primaryPort = await startOnFreePort(primaryDir, primaryLog)

    // -R writes standby.signal and primary_conninfo; the slot keeps the WAL a stopped replica needs.
    await run(
      'pg_basebackup',
      [
        '-D',
        replicaDir,
        '-R',
        '-X',
        'stream',
        '-C',
        '-S',
        'replica',
        '--checkpoint=fast',
        '--no-sync',
        '-w',
        '-h',
        '127.0.0.1',
        '-p',
        String(primaryPort),
        '-U',
        'postgres',
      ],
      remaining('pg_basebackup'),
    )
    replicaPort = await startOnFreePort(replicaDir, replicaLog)

    const [recovery] = await queryOnce<{ in_recovery: boolean }>(
      urlFor(replicaPort),
      'select pg_is_in_recovery() as in_recovery',
      [],
      remaining('replica connection'),
    )
    if (!recovery?.in_recovery) throw new Error('the replica is not in recovery')
    const token = `probe-${process.pid}-${Date.now()}`
    await queryOnce(
      urlFor(primaryPort),
      'create table replica_cluster_probe (token text)',
      [],
      remaining('probe table'),
    )
    await queryOnce(
      urlFor(primaryPort),
      'insert into replica_cluster_probe values ($1)',
      [token],
      remaining('probe row'),
    )
    for (;;) {
      remaining('probe row on the replica')
      const rows = await queryOnce(
        urlFor(replicaPort),
        'select 1 from replica_cluster_probe where token = $1',
        [token],
        remaining('probe row on the replica'),
      ).catch(() => [])
      if (rows.length > 0) break
      await sleep(20)
    }
    await queryOnce(urlFor(primaryPort), 'drop table replica_cluster_probe', [], remaining('probe cleanup'))
  } catch (error) {
    let message = `replica cluster failed to start: ${(error as Error).message}\n${await logs()}`
    await destroy().catch((cleanup: Error) => {
      message += `\n${cleanup.message}`
    })
    throw new Error(message.trimEnd())
  }

  const primaryUrl = urlFor(primaryPort)
  const replicaUrl = urlFor(replicaPort)

  const withLogs = async <T>(what: string, action: () => Promise<T>): Promise<T> => {
    try {
      return await action()
    } catch (error) {
      throw new Error(`${what}: ${(error as Error).message}\n${await logs()}`.trimEnd())
    }
  }

  const pollReplica = async <T extends pg.QueryResultRow>(
    what: string,
    timeoutMs: number,
    text: string,
    values: unknown[],
    done: (row: T | undefined) => boolean,
  ) => {
    const until = Date.now() + timeoutMs
    let last = 'no answer yet'
    for (;;) {
      const left = until - Date.now()
      if (left <= 0) throw new Error(`${what} within ${timeoutMs} ms (last: ${last})`)
      try {
        const [row] = await queryOnce<T>(replicaUrl, text, values, Math.min(left, 5_000))
        if (done(row)) return
        last = JSON.stringify(row)
      } catch (error) {
        last = (error as Error).message
      }
      await sleep(20)
    }
  }

  return {
    primaryUrl,
    replicaUrl,
    directory,
    pauseReplay: () =>
      withLogs('pauseReplay', async () => {
        await queryOnce(replicaUrl, 'select pg_wal_replay_pause()')
        // The call only requests a pause; nothing is guaranteed until the state says paused.
        await pollReplica<{ state: string }>(
          'replay did not pause',
          stepTimeoutMs,
          'select pg_get_wal_replay_pause_state() as state',
          [],
          (row) => row?.state === 'paused',
        )
      }),
    resumeReplay: () =>
      withLogs('resumeReplay', async () => {
        await queryOnce(replicaUrl, 'select pg_wal_replay_resume()')
      }),
    stopReplica: () => withLogs('stopReplica', () => stopServer(replicaDir, 'fast', stepTimeoutMs)),
    startReplica: () =>
      withLogs('startReplica', () => pgCtl(['start', '-D', replicaDir, '-l', replicaLog], stepTimeoutMs)),
    waitForCatchUp: (timeoutMs = stepTimeoutMs) =>
      withLogs('waitForCatchUp', async () => {
        const [target] = await queryOnce<{ lsn: string }>(
          primaryUrl,
          'select pg_current_wal_lsn()::text as lsn',
          [],
          timeoutMs,
        )
        await pollReplica<{ caught_up: boolean; replayed: string | null; state: string }>(
          `the replica did not replay up to ${target?.lsn}`,
          timeoutMs,
          `select pg_last_wal_replay_lsn() >= $1::pg_lsn as caught_up,
            pg_last_wal_replay_lsn()::text as replayed, pg_get_wal_replay_pause_state() as state`,
          [target?.lsn],
          (row) => row?.caught_up === true,
        )
      }),
    destroy,
  }
}

function postgresUser(): { uid: number; gid: number } {
  const result = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' })
  const group = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' })
  if (result.status !== 0 || group.status !== 0) {
    throw new Error('running as root, but there is no `postgres` system user to run PostgreSQL as')
  }
  return { uid: Number(result.stdout.trim()), gid: Number(group.stdout.trim()) }
}

async function tail(file: string, lines = logTailLines): Promise<string> {
  const text = await readFile(file, 'utf8').catch(() => '')
  return text.trimEnd().split('\n').slice(-lines).join('\n')
}
