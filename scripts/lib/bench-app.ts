import { randomBytes, randomUUID } from 'node:crypto'
import { tmpdir } from 'node:os'
import { sql } from 'kysely'
import { openPglite } from '../../db/connect.js'
import { openPostgres } from '../../db/postgres.js'
import type { Role } from '../../src/access/roles.js'
import { type App, buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createOrganization } from '../../src/modules/users/service.js'
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js'

/**
 * The service in this process for an in-process benchmark: on a database of its own on the
 * PostgreSQL server `serverUrl` names (created now, dropped by `close`), or on in-memory PGlite;
 * `environment` adds or overrides settings. With `proxied`, on PostgreSQL, the service reaches its
 * database through a loopback TCP proxy (returned as `proxy`, to cut it) and opens it as it does in
 * service (its pool and timeouts from the settings). `url`: the database's, on PostgreSQL, for a
 * ceiling that reaches it with pg alone.
 */
export async function benchApp(
  serverUrl: string | undefined,
  name: string,
  environment: Record<string, string> = {},
  { proxied = false } = {},
) {
  const server = serverUrl ? openPostgres({ url: serverUrl, poolMax: 1 }) : undefined
  let url: string | undefined
  let proxy: TcpProxy | undefined
  if (server && serverUrl) {
    await sql`drop database if exists ${sql.id(name)} with (force)`.execute(server.db)
    await sql`create database ${sql.id(name)}`.execute(server.db)
    const own = new URL(serverUrl)
    own.pathname = `/${name}`
    if (proxied) {
      proxy = await startTcpProxy(own.hostname, Number(own.port || 5432))
      own.host = `127.0.0.1:${proxy.port}`
    }
    url = own.toString()
  }
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: tmpdir(),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    OUTBOX_WORKER: 'false',
    // No mail leaves a benchmark.
    MAIL_TRANSPORT: 'log',
    // Raised for the run: a benchmark is one client sending far beyond a real user's allowance.
    RATE_LIMIT_AUTHENTICATED: '1000000000',
    ...(url ? { DATABASE_URL: url } : {}),
    ...environment,
  })
  // Through the proxy, the app opens its database itself, as in service.
  const database = proxy ? undefined : url ? openPostgres({ url, poolMax: 10 }) : await openPglite({})
  const app = await buildApp(config, database ? { database } : {})
  // Tokens are signed with the key the app reads when it is ready.
  await app.ready()
  return {
    app,
    kind: url ? 'PostgreSQL' : 'PGlite (embedded, in memory)',
    url,
    proxy,
    close: async () => {
      await proxy?.restore()
      await app.close()
      // Closes the proxy's listener and what is left of its connections.
      await proxy?.cut()
      if (server) {
        await sql`drop database if exists ${sql.id(name)} with (force)`.execute(server.db)
        await server.close()
      }
    },
  }
}

/** A new organization with one user of `roles`, and that user's bearer header. */
export async function benchCaller(app: App, roles: Role[]) {
  const groupPath = `/bench/${randomUUID()}`
  const organization = await createOrganization(app.db, { name: 'Benchmark', groupPath })
  const subject = randomUUID()
  const identity = { subject, email: `${subject}@bench.test`, firstName: 'Bench', lastName: 'User' }
  await app.db
    .insertInto('users')
    .values({
      organization_id: organization.id,
      subject,
      email: identity.email,
      first_name: identity.firstName,
      last_name: identity.lastName,
      roles,
    })
    .execute()
  const token = app.tokenIssuer?.issueAccessToken({ ...identity, roles, groupPath }, randomUUID())
  return { organization, headers: { authorization: `Bearer ${token}` } }
}
