import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

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
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
