import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'
import { CHROMIUM_FLAGS, findChromium } from '../../scripts/lib/chromium.js'

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
