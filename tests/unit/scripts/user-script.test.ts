import { randomUUID } from 'node:crypto'
import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../../db/connect.js'
import { runUserCommand } from '../../../scripts/user/index.js'
import { verifyPassword } from '../../../src/identity/password-hashing.js'
import { openTestDatabase } from '../../helpers/app.js'

let handle: DatabaseHandle

beforeAll(async () => {
  handle = await openTestDatabase()
})
afterAll(async () => {
  await handle.close()
})

async function run(...argv: string[]) {
  const lines: string[] = []
  const code = await runUserCommand(handle.db, argv, (line) => lines.push(line))
  return { code, output: lines.join('\n') }
}

/** A fresh organization, created through the script, and a unique e-mail address for it. */
async function newOrganization() {
  const group = `/test/${randomUUID()}`
  const result = await run('org', 'create', '--name', 'Script Practice', '--group', group)
  expect(result.code).toBe(0)
  return { group, email: `${randomUUID()}@example.test` }
}

const findUser = (email: string) =>
  handle.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirstOrThrow()

const userArgs = (group: string, email: string) => [
  'create',
  '--org',
  group,
  '--email',
  email,
  '--first',
  'Ann',
  '--last',
  'Lee',
  '--roles',
  'ADMIN,PROVIDER',
]

describe('user script: org', () => {
  it('creates an organization and prints its id and group path', async () => {
    const group = `/test/${randomUUID()}`
    const result = await run('org', 'create', '--name', 'North Clinic', '--group', group)
    expect(result.code).toBe(0)
    const row = await handle.db
      .selectFrom('organizations')
      .selectAll()
      .where('group_path', '=', group)
      .executeTakeFirstOrThrow()
    expect(row.name).toBe('North Clinic')
    expect(result.output).toBe(`Created organization ${row.id} ${group}`)
  })

  it('exits 1 with "already exists" when the group path is taken', async () => {
    const { group } = await newOrganization()
    const result = await run('org', 'create', '--name', 'Again', '--group', group)
    expect(result.code).toBe(1)
    expect(result.output).toContain(`group path ${group} already exists`)
  })

  it('lists organizations with id, group path and name', async () => {
    const { group } = await newOrganization()
    const result = await run('org', 'list')
    expect(result.code).toBe(0)
    expect(result.output).toMatch(new RegExp(`^\\d+\\t${group}\\tScript Practice$`, 'm'))
  })
})

describe('user script: create', () => {
  it('creates a user with the given roles and stores only a hash of the given password', async () => {
    const { group, email } = await newOrganization()
    const result = await run(...userArgs(group, email), '--password', 'a-long-enough-password')
    expect(result.code).toBe(0)
    const user = await findUser(email)
    expect(user.roles).toEqual(['ADMIN', 'PROVIDER'])
    expect(user.first_name).toBe('Ann')
    expect(user.password_hash).not.toBe('a-long-enough-password')
    expect(await verifyPassword('a-long-enough-password', user.password_hash as string)).toBe(true)
    expect(result.output).not.toContain(user.password_hash as string)
    expect(result.output).not.toContain('Generated password')
    expect(result.output).not.toContain('temporary')
    expect(user.password_change_required).toBe(false)
  })

  it('marks a given password temporary with --temporary', async () => {
    const { group, email } = await newOrganization()
    const result = await run(...userArgs(group, email), '--password', 'a-long-enough-password', '--temporary')
    expect(result.code).toBe(0)
    expect(result.output).toContain('The password is temporary: it must be changed before signing in')
    expect((await findUser(email)).password_change_required).toBe(true)
  })

  it('exits 2 for --temporary without --password, and creates nothing', async () => {
    const { group, email } = await newOrganization()
    const result = await run(...userArgs(group, email), '--temporary')
    expect(result.code).toBe(2)
    expect(result.output).toContain('--temporary goes with --password')
    expect(result.output).toContain('Usage: npm run user')
    const rows = await handle.db.selectFrom('users').select('id').where('email', '=', email).execute()
    expect(rows).toEqual([])
  })

  it('exits 1 for a password that breaks the policy, naming the rule', async () => {
    const { group, email } = await newOrganization()
    const short = await run(...userArgs(group, email), '--password', 'too-short')
    expect(short).toEqual({ code: 1, output: 'Error: password must have at least 12 characters' })
    const ownEmail = await run(...userArgs(group, email), '--password', email.toUpperCase())
    expect(ownEmail).toEqual({ code: 1, output: 'Error: password must not be the account e-mail address' })
  })

  it('accepts the organization by id', async () => {
    const { group, email } = await newOrganization()
    const organization = await handle.db
      .selectFrom('organizations')
      .select('id')
      .where('group_path', '=', group)
      .executeTakeFirstOrThrow()
    const result = await run(
      ...userArgs(String(organization.id), email),
      '--password',
      'a-long-enough-password',
    )
    expect(result.code).toBe(0)
    expect((await findUser(email)).organization_id).toBe(organization.id)
  })

  it('generates a password, prints it once, and stores a hash that verifies', async () => {
    const { group, email } = await newOrganization()
    const result = await run(...userArgs(group, email))
    expect(result.code).toBe(0)
    const password = result.output.match(/Generated password \(shown only now\): (\S+)/)?.[1]
    expect(password).toBeDefined()
    expect((password as string).length).toBeGreaterThanOrEqual(16)
    expect(result.output.split(password as string)).toHaveLength(2)
    const user = await findUser(email)
    expect(await verifyPassword(password as string, user.password_hash as string)).toBe(true)
    expect(user.password_change_required).toBe(true)
    expect(result.output).toContain('The password is temporary: it must be changed before signing in')
  })

  it('creates an account without a password when only --subject is given', async () => {
    const { group, email } = await newOrganization()
    const subject = `external-${randomUUID()}`
    const result = await run(...userArgs(group, email), '--subject', subject)
    expect(result.code).toBe(0)
    expect(result.output).not.toContain('Generated password')
    const user = await findUser(email)
    expect(user.subject).toBe(subject)
    expect(user.password_hash).toBeNull()
    expect(user.password_change_required).toBe(false)
  })

  it('exits 1 naming an unknown role and creates nothing', async () => {
    const { group, email } = await newOrganization()
    const args = userArgs(group, email).map((arg) => (arg === 'ADMIN,PROVIDER' ? 'ADMIN,SURGEON' : arg))
    const result = await run(...args, '--password', 'a-long-enough-password')
    expect(result.code).toBe(1)
    expect(result.output).toBe('Error: Unknown roles: SURGEON')
    const rows = await handle.db.selectFrom('users').select('id').where('email', '=', email).execute()
    expect(rows).toEqual([])
  })

  it('exits 2 with the usage text when --email is missing', async () => {
    const { group } = await newOrganization()
    const result = await run('create', '--org', group, '--first', 'A', '--last', 'L', '--roles', 'ADMIN')
    expect(result.code).toBe(2)
    expect(result.output).toContain('Missing option --email')
    expect(result.output).toContain('Usage: npm run user')
  })

  it('exits 1 with "already exists" when the e-mail is taken, whatever its case', async () => {
    const { group, email } = await newOrganization()
    expect((await run(...userArgs(group, email))).code).toBe(0)
    const result = await run(...userArgs(group, email.toUpperCase()))
    expect(result.code).toBe(1)
    expect(result.output).toContain('already exists')
  })

  it('exits 1 when the organization does not exist', async () => {
    const result = await run(...userArgs(`/test/${randomUUID()}`, `${randomUUID()}@example.test`))
    expect(result.code).toBe(1)
    expect(result.output).toMatch(/^Error: Organization \/test\/\S+ not found$/)
  })
})

describe('user script: list and deactivate', () => {
  it('lists the users of an organization with roles and state', async () => {
    const { group, email } = await newOrganization()
    await run(...userArgs(group, email))
    const user = await findUser(email)
    const result = await run('list', '--org', group)
    expect(result.code).toBe(0)
    expect(result.output).toBe(`${user.id}\t${email}\tADMIN,PROVIDER\tactive`)
  })

  it('deactivates a user found by e-mail in any case, ending their sessions', async () => {
    const { group, email } = await newOrganization()
    await run(...userArgs(group, email))
    const sessionId = randomUUID()
    await handle.db
      .insertInto('sessions')
      .values({
        id: sessionId,
        user_id: (await findUser(email)).id,
        client_id: 'ehr-api',
        expires_at: new Date(Date.now() + 3_600_000),
        revoked_at: null,
        revoked_reason: null,
      })
      .execute()
    const result = await run('deactivate', '--email', email.toUpperCase())
    expect(result.code).toBe(0)
    const after = await handle.db
      .selectFrom('users')
      .select(['active', sql<boolean>`updated_at > created_at`.as('touched')])
      .where('email', '=', email)
      .executeTakeFirstOrThrow()
    expect(after).toEqual({ active: false, touched: true })
    const session = await handle.db
      .selectFrom('sessions')
      .select(['revoked_reason'])
      .where('id', '=', sessionId)
      .executeTakeFirstOrThrow()
    expect(session.revoked_reason).toBe('DEACTIVATED')
    expect((await run('list', '--org', group)).output).toMatch(/\tinactive$/)
  })

  it('exits 1 when no user has the e-mail', async () => {
    const result = await run('deactivate', '--email', `${randomUUID()}@example.test`)
    expect(result.code).toBe(1)
    expect(result.output).toContain('not found')
  })
})

describe('user script: reset-password', () => {
  it('gives a user found by e-mail in any case a new temporary password, printed once, and ends their sessions', async () => {
    const { group, email } = await newOrganization()
    await run(...userArgs(group, email), '--password', 'the-old-password-123')
    const user = await findUser(email)
    const sessionId = randomUUID()
    await handle.db
      .insertInto('sessions')
      .values({
        id: sessionId,
        user_id: user.id,
        client_id: 'ehr-api',
        expires_at: new Date(Date.now() + 3_600_000),
        revoked_at: null,
        revoked_reason: null,
      })
      .execute()
    const result = await run('reset-password', '--email', email.toUpperCase())
    expect(result.code).toBe(0)
    const password = result.output.match(/Generated password \(shown only now\): (\S+)/)?.[1]
    expect(password).toBeDefined()
    expect(result.output.split(password as string)).toHaveLength(2)
    expect(result.output).toContain(`Reset the password of user ${user.id} ${email}`)
    expect(result.output).toContain('The password is temporary: it must be changed before signing in')
    const after = await findUser(email)
    expect(await verifyPassword(password as string, after.password_hash as string)).toBe(true)
    expect(await verifyPassword('the-old-password-123', after.password_hash as string)).toBe(false)
    expect(after.password_change_required).toBe(true)
    const session = await handle.db
      .selectFrom('sessions')
      .select(['revoked_reason'])
      .where('id', '=', sessionId)
      .executeTakeFirstOrThrow()
    expect(session.revoked_reason).toBe('PASSWORD_RESET')
  })

  it('gives an account without a password (as the seed once made) one to sign in with', async () => {
    const { group, email } = await newOrganization()
    await run(...userArgs(group, email), '--subject', randomUUID())
    expect((await findUser(email)).password_hash).toBeNull()
    const result = await run('reset-password', '--email', email)
    expect(result.code).toBe(0)
    const password = result.output.match(/Generated password \(shown only now\): (\S+)/)?.[1]
    expect(await verifyPassword(password as string, (await findUser(email)).password_hash as string)).toBe(
      true,
    )
  })

  it("exits 1 for a client's service account, which signs in with its secret", async () => {
    const { group } = await newOrganization()
    const clientId = `reset-${randomUUID()}`
    await run(
      'client',
      'create',
      '--org',
      group,
      '--client-id',
      clientId,
      '--name',
      'Sync',
      '--roles',
      'ADMIN',
    )
    const account = await handle.db
      .selectFrom('clients')
      .innerJoin('users', 'users.id', 'clients.user_id')
      .select(['users.email', 'users.password_hash'])
      .where('clients.client_id', '=', clientId)
      .executeTakeFirstOrThrow()
    const result = await run('reset-password', '--email', account.email)
    expect(result.code).toBe(1)
    expect(result.output).toContain('service account of a client')
    expect((await findUser(account.email)).password_hash).toBe(account.password_hash)
  })

  it('exits 1 when no user has the e-mail', async () => {
    const result = await run('reset-password', '--email', `${randomUUID()}@example.test`)
    expect(result.code).toBe(1)
    expect(result.output).toContain('not found')
  })
})

describe('user script: usage', () => {
  it('prints the usage text and exits 0 for help or no arguments', async () => {
    for (const argv of [[], ['help']]) {
      const result = await run(...argv)
      expect(result.code).toBe(0)
      expect(result.output).toContain('Usage: npm run user')
    }
  })

  it('exits 2 for an unknown command or option', async () => {
    expect((await run('promote', '--email', 'a@b.co')).code).toBe(2)
    const result = await run('org', 'list', '--verbose')
    expect(result.code).toBe(2)
    expect(result.output).toContain("Unknown option '--verbose'")
  })
})

describe('user script: client', () => {
  it('creates a confidential client whose secret is printed once and stored only as a hash', async () => {
    const db = await openTestDatabase()
    try {
      const group = `/clients/${randomUUID()}`
      const lines: string[] = []
      const out = (line: string) => lines.push(line)
      expect(await runUserCommand(db.db, ['org', 'create', '--name', 'Clinic', '--group', group], out)).toBe(
        0,
      )
      const clientId = `sync-${randomUUID().slice(0, 8)}`
      expect(
        await runUserCommand(
          db.db,
          [
            'client',
            'create',
            '--org',
            group,
            '--client-id',
            clientId,
            '--name',
            'Sync',
            '--roles',
            'BILLING',
          ],
          out,
        ),
      ).toBe(0)
      const secret = lines.join('\n').match(/Client secret \(shown only now\): (\S+)/)?.[1]
      expect(secret).toBeTruthy()
      const row = await db.db
        .selectFrom('clients')
        .select('secret_hash')
        .where('client_id', '=', clientId)
        .executeTakeFirstOrThrow()
      expect(row.secret_hash).not.toContain(secret as string)
      expect(await verifyPassword(secret as string, row.secret_hash)).toBe(true)
      lines.length = 0
      expect(await runUserCommand(db.db, ['client', 'list', '--org', group], out)).toBe(0)
      expect(lines.join('\n')).toContain(`${clientId}\tSync\tBILLING\tactive`)
      expect(
        await runUserCommand(
          db.db,
          [
            'client',
            'create',
            '--org',
            group,
            '--client-id',
            clientId,
            '--name',
            'Again',
            '--roles',
            'BILLING',
          ],
          out,
        ),
      ).toBe(1)
      expect(lines.at(-1)).toBe(`Error: A client with id ${clientId} already exists`)
    } finally {
      await db.close()
    }
  })
})
