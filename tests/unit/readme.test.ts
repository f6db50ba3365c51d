import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ROUTE_ACCESS } from '../../src/access/route-access.js'
import { ConfigSchema } from '../../src/config.js'
import { ERRORS } from '../../src/errors.js'

// Table cells are compared without their padding, which the formatter may change.
const readme = readFileSync('README.md', 'utf8').replace(/ *\| */g, '|')
const envExample = readFileSync('.env.example', 'utf8')

describe('README.md stays true', () => {
  it('lists every /api route with exactly the roles of the access table', () => {
    for (const [route, { allow }] of Object.entries(ROUTE_ACCESS)) {
      const who =
        allow === 'public'
          ? 'anyone (public)'
          : allow === 'authenticated'
            ? 'any valid token'
            : allow.join(', ')
      expect(readme, route).toContain(`|${route}|${who}|`)
    }
  })

  it('documents every error code with its status', () => {
    for (const [code, { status }] of Object.entries(ERRORS)) {
      expect(readme, code).toMatch(new RegExp(`\\|${code}\\|[^|]*${status}`))
    }
  })

  it('and .env.example name every configuration variable', () => {
    for (const name of Object.keys(ConfigSchema.properties)) {
      expect(readme, name).toContain(`\`${name}\``)
      expect(envExample, name).toMatch(new RegExp(`^#? ?${name}=`, 'm'))
    }
  })
})
