import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../helpers/servers/processes.js'

/** The receiver of docs/webhooks.md, as a reader would copy it. */
async function documentedReceiver(): Promise<string> {
  const page = await readFile('docs/webhooks.md', 'utf8')
  const section = page.slice(page.indexOf('## Verifying a delivery'))
  const code = section.match(/```js\n([\s\S]*?)```/)?.[1]
  if (!code) throw new Error('docs/webhooks.md has no receiver example')
  return code
}

let dir: string
let file: string
const running: ChildProcess[] = []

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ehr-receiver-'))
  file = path.join(dir, 'receiver.mjs')
  await writeFile(file, await documentedReceiver())
})
afterAll(async () => {
  for (const child of running) child.kill('SIGKILL')
  await rm(dir, { recursive: true, force: true })
})

/** Runs the example with `secret` on loopback; resolves once it answers. */
async function startReceiver(secret: string): Promise<string> {
  const port = await freePort()
  // Outside the project, so that no package of ours could be found: Node.js alone.
  const child = spawn(process.execPath, [file], {
    cwd: dir,
    env: { PATH: process.env.PATH, EHR_WEBHOOK_SECRET: secret, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  running.push(child)
  let stderr = ''
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  const url = `http://127.0.0.1:${port}/ehr-events`
  for (let attempt = 0; attempt < 100; attempt++) {
    if (child.exitCode !== null) break
    const answered = await fetch(url, { method: 'POST' }).then(
      () => true,
      () => false,
    )
    if (answered) return url
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`the receiver did not start: ${stderr}`)
}

const body = JSON.stringify({ event: 'patient.created', timestamp: '2030-01-01T00:00:00Z', data: { id: 42 } })

function deliver(url: string, headers: Record<string, string>, payload = body) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: payload,
  }).then((response) => response.status)
}

/** Headers as the service sends them, signed by the standardwebhooks package (an independent implementation). */
function signed(signer: Webhook, sentAt = new Date(), payload = body) {
  const id = `msg_${randomUUID()}`
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': signer.sign(id, sentAt, payload),
  }
}

const whsec = `whsec_${randomBytes(32).toString('base64')}`
const plain = 'a-plain-secret-of-some-length-0123456789'
const secrets = [
  { kind: 'a whsec_ secret', secret: whsec, signer: new Webhook(whsec) },
  {
    kind: 'a plain secret',
    secret: plain,
    signer: new Webhook(Buffer.from(plain, 'utf8'), { format: 'raw' }),
  },
]

describe('the receiver example of docs/webhooks.md', () => {
  it('imports nothing but Node.js built-ins', async () => {
    const imports = [...(await documentedReceiver()).matchAll(/from '([^']+)'/g)].map((match) => match[1])
    expect(imports.length).toBeGreaterThan(0)
    for (const module of imports) expect(module).toMatch(/^node:/)
  })

  for (const { kind, secret, signer } of secrets) {
    it(`accepts what Standard Webhooks signs with ${kind}, and refuses a changed body, an old timestamp or another key`, async () => {
      const url = await startReceiver(secret)
      expect(await deliver(url, signed(signer))).toBe(204)
      expect(await deliver(url, signed(signer), body.replace('42', '43'))).toBe(400)
      expect(await deliver(url, signed(signer, new Date(Date.now() - 10 * 60_000)))).toBe(400)
      const stranger = new Webhook(`whsec_${randomBytes(32).toString('base64')}`)
      expect(await deliver(url, signed(stranger))).toBe(400)
      // During a rotation two signatures arrive; one under the receiver's secret is enough.
      const rotation = signed(signer)
      const other = stranger.sign(
        rotation['webhook-id'],
        new Date(Number(rotation['webhook-timestamp']) * 1000),
        body,
      )
      expect(
        await deliver(url, { ...rotation, 'webhook-signature': `${other} ${rotation['webhook-signature']}` }),
      ).toBe(204)
      expect(await deliver(url, { ...rotation, 'webhook-signature': 'v1,' })).toBe(400)
    })
  }
})
