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

const withoutCode = (markdown: string) => markdown.replace(/```[\s\S]*?```/g, '')

/** The anchors a page's headings get, as GitHub makes them (a repeated heading gets `-1`, `-2`, …). */
function headingAnchors(file: string): string[] {
  const seen = new Map<string, number>()
  return [...withoutCode(readFileSync(file, 'utf8')).matchAll(/^#{1,6}\s+(.+)$/gm)].map(([, heading]) => {
    const slug = (heading ?? '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const repeats = seen.get(slug) ?? 0
    seen.set(slug, repeats + 1)
    return repeats ? `${slug}-${repeats}` : slug
  })
}

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
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(16_384)
  })

  it('links to the generated reference instead of copying it', () => {
    for (const page of ['configuration', 'roles', 'errors']) {
      expect(readme).toContain(`(docs/reference/${page}.md)`)
    }
  })

  it('and the documents under docs/ link only to files and headings that exist', () => {
    for (const file of ['README.md', ...markdownFiles('docs')]) {
      for (const [, target] of withoutCode(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (!target || /^[a-z]+:/.test(target)) continue
        const [page, anchor] = target.split('#')
        const resolved = page ? path.join(path.dirname(file), decodeURI(page)) : file
        expect(existsSync(resolved), `${file} links to ${target}`).toBe(true)
        if (anchor && resolved.endsWith('.md')) {
          expect(headingAnchors(resolved), `${file} links to ${target}`).toContain(anchor)
        }
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
