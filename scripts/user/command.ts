import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { sql } from 'kysely'
import type { Db } from '../../db/database.js'
import { migrateToLatest } from '../../db/migrator.js'
import { ROLES } from '../../src/access/roles.js'
import { loadConfig } from '../../src/config.js'
import { AppError, conflict, fromDatabaseError, notFound } from '../../src/errors.js'
import { hashPassword } from '../../src/identity/password-hashing.js'
import { revokeUserSessions } from '../../src/identity/sessions.js'
import { retirePasswordResetTokens } from '../../src/modules/auth/queries.js'
import { createClient, createClientWithKeys, PUBLIC_HTTPS_ONLY } from '../../src/modules/clients/service.js'
import { createOrganization, createUser } from '../../src/modules/users/service.js'
import { systemResolver, type TargetPolicy } from '../../src/outbox/targets.js'
import { openCommandDatabase } from '../cli/run.js'

type Out = (line: string) => void

/** A command line that cannot be run as given: exit code 2 and the usage text. */
class UsageError extends Error {}

/** Every option of every command; a command reads only those it declares, and required ones are checked. */
interface Options {
  name: string
  group: string
  org: string
  email: string
  first: string
  last: string
  roles: string
  password?: string
  subject?: string
  'client-id': string
  temporary?: boolean
  'jwks-file'?: string
  'jwks-url'?: string
}

/** What commands need besides the database and their options. */
export interface CommandContext {
  /** Where a client's JWKS URL may point; https and public hosts only unless the configuration allows more. */
  jwksUrls: TargetPolicy
}

/** Options that take no value. */
const FLAGS: ReadonlySet<string> = new Set(['temporary'])

interface Command {
  /** The options the command accepts, each marked required (true) or not. */
  options: Partial<Record<keyof Options, boolean>>
  run(db: Db, options: Options, out: Out, context: CommandContext): Promise<void>
}

const USAGE = `Usage: npm run user -- <command> [options]
   or: node dist/cli.mjs user <command> [options]   (a build, or the Docker image)

Commands:
  org create --name <name> --group <group path, e.g. /practices/north>
  org list
  create --org <id or group path> --email <email> --first <first name> --last <last name>
         --roles <ROLE,ROLE> [--password <password> [--temporary]] [--subject <external sub>]
  list --org <id or group path>
  deactivate --email <email>
  reset-password --email <email>
  client create --org <id or group path> --client-id <id> --name <name> --roles <ROLE,ROLE>
         [--jwks-file <path to a JWKS of public keys> | --jwks-url <https URL of one>]
  client list --org <id or group path>
  help

Roles: ${ROLES.join(', ')}
Without --password or --subject, create generates a password and prints it once. A generated
password is temporary: the user must change it (POST /api/auth/change-password) before signing in.
--temporary makes a --password temporary in the same way.
reset-password replaces a forgotten password with a generated temporary one, printed once, and ends
the account's sessions and reset links (where no mail can reach it, or the account never had one).
With --subject and no --password, the account signs in only through the external identity provider.
Prefer the generated password: a --password value stays in the shell history.
A client gets a secret, printed once, unless it is registered with public keys (--jwks-file or
--jwks-url): then it signs its token requests with its private key (SMART Backend Services) instead.
With the embedded database (no DATABASE_URL), stop the server first: PGlite cannot share its data
directory. With DATABASE_URL, commands run beside running servers.`

// Long enough that base64url yields 24 characters, above the service's minimum password length.
const GENERATED_PASSWORD_BYTES = 18

async function findOrganization(db: Db, reference: string) {
  const query = db.selectFrom('organizations').select(['id', 'group_path'])
  // Longer digit strings cannot be an integer id; they are looked up as a group path instead.
  const organization = await (/^\d{1,9}$/.test(reference)
    ? query.where('id', '=', Number(reference))
    : query.where('group_path', '=', reference)
  ).executeTakeFirst()
  if (!organization) throw notFound(`Organization ${reference}`)
  return organization
}

async function orgCreate(db: Db, options: Options, out: Out) {
  const organization = await createOrganization(db, { name: options.name, groupPath: options.group })
  out(`Created organization ${organization.id} ${organization.group_path}`)
}

async function orgList(db: Db, _options: Options, out: Out) {
  const organizations = await db
    .selectFrom('organizations')
    .select(['id', 'group_path', 'name'])
    .orderBy('id')
    .execute()
  for (const organization of organizations) {
    out(`${organization.id}\t${organization.group_path}\t${organization.name}`)
  }
  if (organizations.length === 0) out('No organizations')
}

async function userCreate(db: Db, options: Options, out: Out) {
  if (options.temporary && options.password === undefined) {
    throw new UsageError('--temporary goes with --password (a generated password is always temporary)')
  }
  const organization = await findOrganization(db, options.org)
  const generatedPassword =
    options.password === undefined && options.subject === undefined
      ? randomBytes(GENERATED_PASSWORD_BYTES).toString('base64url')
      : undefined
  const user = await createUser(db, {
    organizationId: organization.id,
    email: options.email,
    firstName: options.first,
    lastName: options.last,
    roles: options.roles.split(',').map((role) => role.trim()),
    password: options.password ?? generatedPassword,
    subject: options.subject,
    temporaryPassword: generatedPassword !== undefined || options.temporary === true,
  })
  out(
    `Created user ${user.id} ${user.email} in ${organization.group_path} with roles ${user.roles.join(',')}`,
  )
  if (generatedPassword) out(`Generated password (shown only now): ${generatedPassword}`)
  if (user.password_change_required) out('The password is temporary: it must be changed before signing in')
}

async function userList(db: Db, options: Options, out: Out) {
  const organization = await findOrganization(db, options.org)
  const users = await db
    .selectFrom('users')
    .select(['id', 'email', 'roles', 'active'])
    .where('organization_id', '=', organization.id)
    .orderBy('id')
    .execute()
  for (const user of users) {
    out(`${user.id}\t${user.email}\t${user.roles.join(',')}\t${user.active ? 'active' : 'inactive'}`)
  }
  if (users.length === 0) out('No users')
}

/** Deactivates an account and ends its sessions, as `POST /api/users/{id}/deactivate` does. */
async function userDeactivate(db: Db, options: Options, out: Out) {
  const user = await db.transaction().execute(async (trx) => {
    const deactivated = await trx
      .updateTable('users')
      .set({ active: false, updated_at: sql<Date>`now()` })
      .where((eb) => eb(eb.fn('lower', ['email']), '=', eb.fn('lower', [eb.val(options.email)])))
      .returning(['id', 'email'])
      .executeTakeFirst()
    if (deactivated) await revokeUserSessions(trx, deactivated.id, 'DEACTIVATED')
    return deactivated
  })
  if (!user) throw notFound(`User ${options.email}`)
  out(`Deactivated user ${user.id} ${user.email} and ended their sessions`)
}

/**
 * A new generated temporary password for an account, as a reset link would give one: every session
 * and every outstanding reset link of the account ends with the old password.
 */
async function userResetPassword(db: Db, options: Options, out: Out) {
  const generatedPassword = randomBytes(GENERATED_PASSWORD_BYTES).toString('base64url')
  const passwordHash = await hashPassword(generatedPassword)
  const user = await db.transaction().execute(async (trx) => {
    const account = await trx
      .selectFrom('users')
      .leftJoin('clients', 'clients.user_id', 'users.id')
      .select(['users.id', 'users.email', 'clients.client_id'])
      .where((eb) => eb(eb.fn('lower', ['users.email']), '=', eb.fn('lower', [eb.val(options.email)])))
      .executeTakeFirst()
    if (!account) throw notFound(`User ${options.email}`)
    // A service account signs in with its client's secret or keys; a password would be a way around them.
    if (account.client_id !== null) {
      throw conflict(
        `${account.email} is the service account of a client (${account.client_id}); rotate the client's secret instead`,
      )
    }
    await trx
      .updateTable('users')
      .set({ password_hash: passwordHash, password_change_required: true, updated_at: sql<Date>`now()` })
      .where('id', '=', account.id)
      .execute()
    await revokeUserSessions(trx, account.id, 'PASSWORD_RESET')
    await retirePasswordResetTokens(trx, account.id)
    return account
  })
  out(`Reset the password of user ${user.id} ${user.email} and ended their sessions`)
  out(`Generated password (shown only now): ${generatedPassword}`)
  out('The password is temporary: it must be changed before signing in')
}

async function readJwksFile(file: string): Promise<unknown> {
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new UsageError(`Cannot read --jwks-file ${file}: ${(error as Error).message}`)
  }
  try {
    return JSON.parse(text)
  } catch {
    throw new UsageError(`--jwks-file ${file} is not JSON`)
  }
}

async function clientCreate(db: Db, options: Options, out: Out, context: CommandContext) {
  const { 'jwks-file': jwksFile, 'jwks-url': jwksUrl } = options
  if (jwksFile !== undefined && jwksUrl !== undefined) {
    throw new UsageError('Give --jwks-file or --jwks-url, not both')
  }
  const jwks = jwksFile === undefined ? undefined : await readJwksFile(jwksFile)
  const organization = await findOrganization(db, options.org)
  const client = {
    organizationId: organization.id,
    clientId: options['client-id'],
    name: options.name,
    roles: options.roles.split(',').map((role) => role.trim()),
  }
  const created =
    jwks === undefined && jwksUrl === undefined
      ? await createClient(db, client)
      : await createClientWithKeys(db, client, { jwks, jwksUrl }, context.jwksUrls)
  out(
    `Created client ${created.clientId} in ${organization.group_path} (service account user ${created.userId})`,
  )
  if ('secret' in created) out(`Client secret (shown only now): ${created.secret}`)
  else {
    out(
      `No client secret: the client signs its token requests with its private key (private_key_jwt), verified with ${jwksUrl ? `the keys at ${jwksUrl}` : `the public keys of ${jwksFile}`}`,
    )
  }
}

async function clientList(db: Db, options: Options, out: Out) {
  const organization = await findOrganization(db, options.org)
  const clients = await db
    .selectFrom('clients')
    .innerJoin('users', 'users.id', 'clients.user_id')
    .select(['clients.client_id', 'users.first_name', 'users.roles', 'users.active'])
    .where('users.organization_id', '=', organization.id)
    .orderBy('clients.client_id')
    .execute()
  for (const client of clients) {
    out(
      `${client.client_id}\t${client.first_name}\t${client.roles.join(',')}\t${client.active ? 'active' : 'inactive'}`,
    )
  }
  if (clients.length === 0) out('No clients')
}

const COMMANDS: Record<string, Command> = {
  'org create': { options: { name: true, group: true }, run: orgCreate },
  'org list': { options: {}, run: orgList },
  create: {
    options: {
      org: true,
      email: true,
      first: true,
      last: true,
      roles: true,
      password: false,
      temporary: false,
      subject: false,
    },
    run: userCreate,
  },
  list: { options: { org: true }, run: userList },
  deactivate: { options: { email: true }, run: userDeactivate },
  'reset-password': { options: { email: true }, run: userResetPassword },
  'client create': {
    options: { org: true, 'client-id': true, name: true, roles: true, 'jwks-file': false, 'jwks-url': false },
    run: clientCreate,
  },
  'client list': { options: { org: true }, run: clientList },
}

const isHelp = (argv: string[]) => argv.length === 0 || ['help', '--help', '-h'].includes(argv[0] ?? '')

function parseOptions(command: Command, args: string[]): Options {
  const declared = Object.keys(command.options).map(
    (option) => [option, { type: FLAGS.has(option) ? 'boolean' : 'string' }] as const,
  )
  let values: Record<string, unknown>
  try {
    values = parseArgs({
      args,
      options: Object.fromEntries(declared) as ParseArgsConfig['options'],
      strict: true,
      allowPositionals: false,
    }).values
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  for (const [option, required] of Object.entries(command.options)) {
    if (required && !values[option]) throw new UsageError(`Missing option --${option}`)
  }
  return values as unknown as Options
}

function parseCommand(argv: string[]): { command: Command; options: Options } {
  const name = argv[0] === 'org' || argv[0] === 'client' ? `${argv[0]} ${argv[1] ?? ''}` : (argv[0] ?? '')
  const command = COMMANDS[name]
  if (!command) throw new UsageError(`Unknown command: ${name.trim()}`)
  return { command, options: parseOptions(command, argv.slice(name.split(' ').length)) }
}

const DUPLICATES: Record<string, (options: Options) => string> = {
  organizations_group_path_key: (options) =>
    `An organization with group path ${options.group} already exists`,
  users_email_key: (options) => `A user with email ${options.email} already exists`,
  users_subject_key: (options) => `A user with subject ${options.subject} already exists`,
  clients_client_id_key: (options) => `A client with id ${options['client-id']} already exists`,
}

function failureMessage(error: unknown, options: Options): string | undefined {
  if (error instanceof AppError) return error.details
  const { code, constraint = '' } = error as { code?: string; constraint?: string }
  if (code === '23505') {
    return DUPLICATES[constraint]?.(options) ?? `A record with the same value already exists (${constraint})`
  }
  return fromDatabaseError(error)?.details
}

/** Runs one operator command; returns the process exit code (0 done, 1 refused, 2 bad usage). */
export async function runUserCommand(
  db: Db,
  argv: string[],
  out: Out,
  context: CommandContext = { jwksUrls: PUBLIC_HTTPS_ONLY },
): Promise<number> {
  if (isHelp(argv)) {
    out(USAGE)
    return 0
  }
  let parsed: ReturnType<typeof parseCommand> | undefined
  try {
    parsed = parseCommand(argv)
    await parsed.command.run(db, parsed.options, out, context)
    return 0
  } catch (error) {
    if (error instanceof UsageError) {
      out(`${error.message}\n\n${USAGE}`)
      return 2
    }
    const message = parsed && failureMessage(error, parsed.options)
    if (message === undefined) throw error
    out(`Error: ${message}`)
    return 1
  }
}

/** `npm run user`: opens the configured database and runs one command; returns the exit code. */
export async function userMain(argv: string[]): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`)
  // Help needs no database; opening an embedded one for the first time would create it.
  if (isHelp(argv)) {
    out(USAGE)
    return 0
  }
  const config = loadConfig(process.env)
  const handle = await openCommandDatabase(config)
  try {
    if (config.database.migrateOnStart) await migrateToLatest(handle.db)
    // JWKS URLs follow the webhook address policy, development allowances included.
    const jwksUrls = {
      allowHttp: config.webhooks.allowHttp,
      allowPrivateTargets: config.webhooks.allowPrivateTargets,
      resolve: systemResolver,
    }
    return await runUserCommand(handle.db, argv, out, { jwksUrls })
  } finally {
    await handle.close()
  }
}
