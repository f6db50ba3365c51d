import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ConfigError, ConfigSchema, loadConfig } from '../../../src/config.js'

const readme = readFileSync('README.md', 'utf8')
const envExample = readFileSync('.env.example', 'utf8')

const markdownFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) return markdownFiles(file)
    return entry.name.endsWith('.md') ? [file] : []
  })

// The route, role, error and configuration tables are generated into docs/reference and checked
// there (tests/unit/docs/reference-docs.test.ts); this file checks what is written by hand.
describe('README.md stays a README', () => {
  it('keeps the two commands of the quick start', () => {
    expect(readme).toContain('npm ci && npm start')
    expect(readme).toContain('npm ci && npm test')
  })

  it('names in its quick start every setting the server requires on PostgreSQL', () => {
    const quickStart = readme.slice(
      readme.indexOf('## Quick start'),
      readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
    )
    let problems: string[] = []
    try {
      loadConfig({ DATABASE_URL: 'postgres://127.0.0.1:5432/ehr' }, { server: true })
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError)
      problems = (error as Error).message.split('\n').slice(1)
    }
    const required = ['ENCRYPTION_KEY', 'SMTP_URL', 'MAIL_TRANSPORT=log']
    expect(problems.map((problem) => problem.trim().split(':')[0])).toEqual(['ENCRYPTION_KEY', 'SMTP_URL'])
    expect(problems.join('\n')).toContain('MAIL_TRANSPORT=log')
    for (const setting of required) expect(quickStart, setting).toContain(setting)
  })

  it('stays short enough to read: detail belongs in docs/', () => {
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(25_600)
  })

  it('links to the generated reference instead of copying it', () => {
    for (const page of ['configuration', 'roles', 'errors']) {
      expect(readme).toContain(`(docs/reference/${page}.md)`)
    }
  })

  it('and the documents under docs/ link only to files that exist', () => {
    for (const file of ['README.md', ...markdownFiles('docs')]) {
      const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (!target || /^[a-z]+:/.test(target) || target.startsWith('#')) continue
        const resolved = path.join(path.dirname(file), decodeURI(target.split('#')[0] ?? ''))
        expect(existsSync(resolved), `${file} links to ${target}`).toBe(true)
      }
    }
  })
})

describe('the shell examples', () => {
  // The README's walk sets BASE; every other page's commands can be pasted after it.
  it("name the service's address $BASE everywhere, as the README's walk does", () => {
    for (const file of ['README.md', ...markdownFiles('docs')]) {
      const examples = (readFileSync(file, 'utf8').match(/```[\s\S]*?```/g) ?? []).join('\n')
      const others = [...examples.matchAll(/\$\{?([A-Z_]+)\}?\/(api|fhir|realms|actuator|v3|swagger-ui)\b/g)]
        .map((match) => match[1])
        .filter((name) => name !== 'BASE')
      expect(others, file).toEqual([])
    }
  })
})

describe('.env.example', () => {
  it('names every configuration variable', () => {
    for (const name of Object.keys(ConfigSchema.properties)) {
      expect(envExample, name).toMatch(new RegExp(`^#? ?${name}=`, 'm'))
    }
  })
})
