import { parseArgs } from 'node:util'
import { type Credentials, walkPracticeDay } from './walk.js'

const USAGE = `npm run smoke -- [--base-url URL] [--username EMAIL --password PASSWORD]
                    [--recipient-username EMAIL --recipient-password PASSWORD] [--receiver-host HOST]

Walks a practice's day against a running service with the client generated from openapi.json.
Environment instead of flags: SMOKE_BASE_URL (default http://127.0.0.1:8080), SMOKE_USERNAME and
SMOKE_PASSWORD (default ADMIN_EMAIL and ADMIN_PASSWORD), SMOKE_RECIPIENT_USERNAME and
SMOKE_RECIPIENT_PASSWORD, SMOKE_RECEIVER_HOST (default 127.0.0.1). The account needs the ADMIN and
PROVIDER roles; the service must issue its own tokens (the walk creates a FRONT_DESK account with a
temporary password, which registers the patient and books, and deactivates it at the end) and must
accept webhook targets on the receiver's address (WEBHOOK_ALLOW_HTTP=true and
WEBHOOK_ALLOW_PRIVATE_TARGETS=true for loopback).`

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string', default: process.env.SMOKE_BASE_URL ?? 'http://127.0.0.1:8080' },
      username: { type: 'string', default: process.env.SMOKE_USERNAME ?? process.env.ADMIN_EMAIL },
      password: { type: 'string', default: process.env.SMOKE_PASSWORD ?? process.env.ADMIN_PASSWORD },
      'recipient-username': { type: 'string', default: process.env.SMOKE_RECIPIENT_USERNAME },
      'recipient-password': { type: 'string', default: process.env.SMOKE_RECIPIENT_PASSWORD },
      'receiver-host': { type: 'string', default: process.env.SMOKE_RECEIVER_HOST ?? '127.0.0.1' },
      help: { type: 'boolean', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (!values.username || !values.password) throw new Error(`Give the credentials.\n\n${USAGE}`)
  const recipientUsername = values['recipient-username']
  const recipientPassword = values['recipient-password']
  const recipient: Credentials | undefined =
    recipientUsername && recipientPassword
      ? { username: recipientUsername, password: recipientPassword }
      : undefined

  const started = Date.now()
  let last = started
  await walkPracticeDay({
    baseUrl: values['base-url'],
    admin: { username: values.username, password: values.password },
    recipient,
    receiverHost: values['receiver-host'],
    onStep: (step, detail) => {
      const now = Date.now()
      process.stdout.write(`ok  ${step.padEnd(30)} ${String(now - last).padStart(6)} ms  ${detail}\n`)
      last = now
    },
  })
  process.stdout.write(`smoke walk passed in ${Date.now() - started} ms against ${values['base-url']}\n`)
}

main().catch((error: unknown) => {
  process.stderr.write(`FAIL ${(error as Error).message}\n`)
  process.exitCode = 1
})
