import { parseArgs } from 'node:util'
import { migrateToLatest } from '../../db/migrator.js'
import { bootstrapAdmin, firstStartBanner } from '../../src/bootstrap.js'
import { loadConfig } from '../../src/config.js'
import { openCommandDatabase } from '../cli/run.js'
import { SeedRefused, seedDemoPractice } from './demo-practice.js'

const USAGE = `Usage: npm run seed -- [--patients <n>] [--force]
   or: node dist/cli.mjs seed [--patients <n>] [--force]   (a build, or the Docker image)

Fills the configured database with a demo practice: providers with weekly hours, patients with
appointments, visits, chart entries, invoices and messages. In an empty database it goes into the
bootstrap organization (created first if the server has not started yet), so the administrator
sees it at once; with --force beside other records, into an organization of its own, whose
administrator gets a temporary password, printed once.

  --patients <n>  how many patients (default 300)
  --force         seed even though the database holds records that are not demo data

With the embedded database (no DATABASE_URL), stop the server first: PGlite cannot share its data
directory.`

const DEFAULT_PATIENTS = 300

/** The way into a demo organization of its own, whose administrator the seed created. */
const signInHint = (administrator: { email: string; temporaryPassword: string }) =>
  `${[
    `Its administrator: ${administrator.email} / ${administrator.temporaryPassword}`,
    'This password is shown only now, and is temporary: change it first (POST /api/auth/change-password',
    'with "username", "currentPassword" and "newPassword"), then sign in. A new one, if it is lost:',
    `npm run user -- reset-password --email ${administrator.email}`,
  ].join('\n')}\n`

function parseSeedArgs(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      patients: { type: 'string', default: String(DEFAULT_PATIENTS) },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  }).values
}

/** `npm run seed`: returns the exit code (0 seeded, 1 refused, 2 bad usage). */
export async function seedMain(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseSeedArgs>
  try {
    values = parseSeedArgs(argv)
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}\n`)
    return 2
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`)
    return 0
  }
  const patients = Number(values.patients)
  if (!Number.isInteger(patients) || patients < 1 || patients > 100_000) {
    process.stderr.write(`--patients must be a whole number from 1 to 100000\n\n${USAGE}\n`)
    return 2
  }
  const config = loadConfig(process.env)
  const handle = await openCommandDatabase(config)
  try {
    await migrateToLatest(handle.db)
    // Seeding before the first start: bootstrap as the server would, so someone can sign in.
    const bootstrap = await bootstrapAdmin(handle.db, config)
    if (bootstrap) process.stdout.write(firstStartBanner(config, bootstrap, false))
    const started = Date.now()
    const counts = await seedDemoPractice(handle.db, {
      patients,
      force: values.force,
      billing: config.billing,
    })
    const { organizationId, administrator, ...created } = counts
    process.stdout.write(
      `Demo practice seeded in organization ${organizationId} in ${Math.round((Date.now() - started) / 1000)} s:\n` +
        `${Object.entries(created)
          .map(([what, count]) => `  ${what}: ${count}`)
          .join('\n')}\n`,
    )
    if (administrator) process.stdout.write(signInHint(administrator))
    return 0
  } catch (error) {
    if (!(error instanceof SeedRefused)) throw error
    process.stderr.write(`${error.message}\n`)
    return 1
  } finally {
    await handle.close()
  }
}
