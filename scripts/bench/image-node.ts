import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'

export interface Runtime {
  /** As `node --version` prints it. */
  version: string
  /** The binary. */
  node: string
}

/**
 * The Node.js the Docker image ships (the Dockerfile's ARG NODE_VERSION), so that start-up is also
 * measured on the runtime production runs. It is installed once from the npm registry's `node`
 * package, as CI installs it, into `node_modules/.cache/ehr-service/`; nothing else is downloaded.
 */
export async function imageRuntime(root: string): Promise<Runtime> {
  const dockerfile = await readFile(path.join(root, 'Dockerfile'), 'utf8')
  const version = dockerfile.match(/^ARG NODE_VERSION=(\S+)$/m)?.[1]
  if (!version) throw new Error('The Dockerfile names no NODE_VERSION')
  if (process.version === `v${version}`) return { version: process.version, node: process.execPath }
  const prefix = path.join(root, 'node_modules', '.cache', 'ehr-service', `node-${version}`)
  const node = path.join(prefix, 'node_modules', '.bin', 'node')
  if (!existsSync(node)) {
    process.stdout.write(`Installing Node.js ${version} (the Docker image's) from the npm registry…\n`)
    await promisify(execFile)('npm', [
      'install',
      '--no-save',
      '--no-audit',
      '--no-fund',
      '--prefix',
      prefix,
      `node@${version}`,
    ])
  }
  const { stdout } = await promisify(execFile)(node, ['--version'])
  if (stdout.trim() !== `v${version}`) throw new Error(`${node} is ${stdout.trim()}, not v${version}`)
  return { version: stdout.trim(), node }
}
