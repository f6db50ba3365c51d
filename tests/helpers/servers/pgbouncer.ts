import { execFileSync, spawn } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { exited, freePort } from './processes.js'

export interface PgBouncer {
  port: number
  /** `url` (a database on the PostgreSQL server behind it) reached through this PgBouncer instead. */
  urlOf(url: string): string
  /** The backend process ids of PgBouncer's server connections (its console's SHOW SERVERS). */
  serverPids(): Promise<number[]>
  /** What PgBouncer has logged so far. */
  log(): string
  stop(): Promise<void>
}

export interface PgBouncerOptions {
  /** Any URL of the PostgreSQL server to pool; its host, port and user are used. */
  serverUrl: string
  /** Server connections per database and user (PgBouncer's `default_pool_size`). */
  poolSize?: number
  /**
   * The statement limit PgBouncer sets on its server connections (`connect_query`), as
   * docs/operations.md advises: the clients' own `statement_timeout` startup parameter is ignored.
   */
  statementTimeoutMs?: number
}

const START_TIMEOUT_MS = 10_000
const STOP_TIMEOUT_MS = 5000

/** Debian installs it under /usr/sbin, which a non-root PATH may lack. */
function findBinary(): string {
  const directories = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin']
  for (const directory of directories.filter(Boolean)) {
    const candidate = path.join(directory, 'pgbouncer')
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // Not here.
    }
  }
  throw new Error(
    'pgbouncer is not installed (Debian: `apt-get install -y pgbouncer`; .ci/run installs it when missing)',
  )
}

/** PgBouncer refuses to run as root: then it runs as the `postgres` user. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
    return { uid: id('-u'), gid: id('-g') }
  } catch {
    throw new Error('pgbouncer refuses to run as root, and there is no `postgres` user to run it as')
  }
}

/**
 * A private PgBouncer on a free loopback port, in transaction pooling mode, in front of the
 * PostgreSQL server of `serverUrl` (trust authentication, as the test server has). Its
 * configuration lives in a temporary directory removed by `stop()`, which waits for it to exit.
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  const binary = findBinary()
  const user = runAs()
  const server = new URL(options.serverUrl)
  const port = await freePort()
  const directory = await mkdtemp(path.join(tmpdir(), 'ehr-pgbouncer-'))
  // Readable by the `postgres` user; PgBouncer writes nothing here (it logs to stderr).
  await chmod(directory, 0o755)
  const userName = decodeURIComponent(server.username) || 'postgres'
  const connectQuery =
    options.statementTimeoutMs === undefined
      ? ''
      : ` connect_query='SET statement_timeout = ${options.statementTimeoutMs}'`
  const lines = [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}${connectQuery}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    // With trust, PgBouncer checks only that the user is listed in the auth file.
    'auth_type = trust',
    `auth_file = ${path.join(directory, 'users.txt')}`,
    `admin_users = ${userName}`,
    'pool_mode = transaction',
    `default_pool_size = ${options.poolSize ?? 4}`,
    'max_client_conn = 500',
    // The service sends its statement limit as a startup parameter, which PgBouncer 1.18 refuses
    // unless told to ignore it.
    'ignore_startup_parameters = statement_timeout',
    'server_login_retry = 1',
    'log_connections = 0',
    'log_disconnections = 0',
  ]
  await writeFile(path.join(directory, 'users.txt'), `"${userName}" ""\n`, { mode: 0o644 })
  const configFile = path.join(directory, 'pgbouncer.ini')
  await writeFile(configFile, `${lines.join('\n')}\n`, { mode: 0o644 })

  const child = spawn(binary, [configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(user ? { uid: user.uid, gid: user.gid } : {}),
  })
  let output = ''
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8')
  }
  child.stdout?.on('data', collect)
  child.stderr?.on('data', collect)
  let spawnError: Error | undefined
  child.once('error', (error) => {
    spawnError = error
  })

  const stop = async () => {
    if (!(await exited(child, 0))) {
      child.kill('SIGTERM')
      if (!(await exited(child, STOP_TIMEOUT_MS))) {
        child.kill('SIGKILL')
        await exited(child, STOP_TIMEOUT_MS)
      }
    }
    await rm(directory, { recursive: true, force: true })
  }

  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      await stop()
      throw new Error(
        `pgbouncer did not start: ${spawnError?.message ?? `exited (${child.exitCode})`}\n${output}`,
      )
    }
    // Its own word, rather than a connection test that another process on the port could pass.
    if (output.includes(`listening on 127.0.0.1:${port}`)) break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(
        `pgbouncer did not listen on 127.0.0.1:${port} within ${START_TIMEOUT_MS} ms\n${output}`,
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }

  return {
    port,
    urlOf(url) {
      const through = new URL(url)
      through.hostname = '127.0.0.1'
      through.port = String(port)
      return through.toString()
    },
    async serverPids() {
      const admin = new pg.Client({ host: '127.0.0.1', port, user: userName, database: 'pgbouncer' })
      await admin.connect()
      try {
        const { rows } = await admin.query<{ remote_pid: string | number }>('SHOW SERVERS')
        return rows.map((row) => Number(row.remote_pid))
      } finally {
        await admin.end()
      }
    },
    log: () => output,
    stop,
  }
}
