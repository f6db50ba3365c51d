import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const scripts = JSON.parse(readFileSync('package.json', 'utf8')).scripts as Record<string, string>

/** The command of the image's last CMD, in its exec form (`CMD ["node", …]`). */
function imageCommand(): string[] {
  const commands = [...readFileSync('Dockerfile', 'utf8').matchAll(/^CMD (\[.*\])$/gm)]
  return JSON.parse(commands.at(-1)?.[1] ?? '[]')
}

describe('the production start', () => {
  // The benchmarks start the service as `npm run start:prod` does; the image must run it the same way.
  it('is the same command in the Docker image as in npm run start:prod', () => {
    const command = (scripts['start:prod'] as string).replace(/^exec /, '').split(' ')
    expect(command).toContain('dist/server.mjs')
    expect(imageCommand()).toEqual(command)
  })

  // npm runs a script through sh, which dies of SIGTERM without passing it on: the server would
  // outlive a stopped npm (npm start's test, tests/process/npm-start.test.ts, shows it for real).
  it('replaces npm’s shell, so that stopping npm stops the server', () => {
    expect(scripts['start:prod']).toMatch(/^exec node /)
    expect(scripts.start).toMatch(/^exec node /)
  })
})
