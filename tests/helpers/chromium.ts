import { accessSync, constants } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'

/**
 * The system's Chromium (Debian's `chromium` package), or CHROMIUM_PATH when set: the browser
 * tests drive it with playwright-core and download no browser of their own.
 */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const candidates = env.CHROMIUM_PATH
    ? [env.CHROMIUM_PATH]
    : (env.PATH ?? '')
        .split(delimiter)
        .flatMap((dir) => [join(dir, 'chromium'), join(dir, 'chromium-browser')])
  return candidates.find((file) => {
    try {
      accessSync(file, constants.X_OK)
      return true
    } catch {
      return false
    }
  })
}

// Without the background-networking flags Chromium keeps trying to reach Google's services; in a
// closed network those connections are refused and, worse, they are traffic beyond loopback.
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export interface TestBrowser {
  context: BrowserContext
  /** Requests a page tried to send to any other origin: refused, and a test fails on any. */
  offHost: string[]
  close(): Promise<void>
}

/**
 * Chromium with a fresh profile that reaches only `origins` (e.g. `http://127.0.0.1:8080`): every
 * other request is refused and noted in `offHost`.
 */
export async function openChromium(origins: string[]): Promise<TestBrowser> {
  const executablePath = findChromium()
  if (!executablePath) throw new Error('No Chromium found (the suite is collected only when there is one)')
  const profile = await mkdtemp(join(tmpdir(), 'ehr-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
  })
  const offHost: string[] = []
  await context.route('**/*', (route) => {
    const url = route.request().url()
    if (origins.some((origin) => url.startsWith(`${origin}/`))) return route.continue()
    offHost.push(url)
    return route.abort()
  })
  return {
    context,
    offHost,
    async close() {
      await context.close()
      await rm(profile, { recursive: true, force: true })
    },
  }
}
