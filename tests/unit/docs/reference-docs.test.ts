import { readFileSync } from 'node:fs'
import { type TSchema, Type } from '@sinclair/typebox'
import { describe, expect, it } from 'vitest'
import { configurationReference } from '../../../scripts/docs/configuration.js'
import { envExample } from '../../../scripts/docs/env-example.js'
import { referenceFiles } from '../../../scripts/docs/reference.js'
import { CONFIG_TOPICS, ConfigSchema } from '../../../src/config.js'
import { ERRORS } from '../../../src/errors.js'

const committed = (file: string) => {
  try {
    return readFileSync(file, 'utf8')
  } catch {
    return undefined
  }
}

describe('the generated reference (docs/reference, .env.example)', () => {
  for (const { path, content } of referenceFiles()) {
    it(`${path} matches the code`, () => {
      expect(committed(path), `${path} is stale: run \`npm run docs\` and commit the result`).toBe(content)
    })
  }

  it('has a description for every configuration variable', () => {
    const undocumented = Object.entries(ConfigSchema.properties as Record<string, TSchema>)
      .filter(([, schema]) => !schema.description)
      .map(([name]) => name)
    expect(undocumented, 'add a `description` to these variables in their topic under src/config/').toEqual(
      [],
    )
  })

  it("lists each error code's usual status among its statuses", () => {
    for (const [code, { status, statuses }] of Object.entries(ERRORS)) {
      expect(statuses as readonly number[], code).toContain(status)
    }
  })

  it('writes .env.example by topic: defaults set, examples and settings without default commented out', () => {
    const topic = Type.Object(
      {
        PORT: Type.Integer({ default: 8080, description: 'TCP port the server listens on' }),
        CORS_ORIGINS: Type.String({ default: '', description: 'Allowed `origins`; **empty**: none.' }),
        SMTP_URL: Type.Optional(
          Type.String({ examples: ['smtp://mail.example:587'], description: 'Mail server' }),
        ),
        ADMIN_PASSWORD: Type.Optional(
          Type.String({ description: `A password ${'and more words '.repeat(8)}` }),
        ),
      },
      { title: 'Server', description: 'The HTTP server.' },
    )
    const [, section] = envExample([topic]).split('\n\n# --- ')
    expect(`# --- ${section}`).toBe(
      [
        '# --- Server ---',
        '# The HTTP server.',
        '',
        '# TCP port the server listens on.',
        'PORT=8080',
        '# Allowed origins; empty: none.',
        'CORS_ORIGINS=',
        '# Mail server.',
        '# SMTP_URL=smtp://mail.example:587',
        '# A password and more words and more words and more words and more words and more words and more',
        '# words and more words and more words.',
        '# ADMIN_PASSWORD=',
        '',
      ].join('\n'),
    )
  })

  it('lists the configuration by topic: a heading per topic, each variable under its own', () => {
    const sections = configurationReference().split('\n## ').slice(1)
    expect(sections.map((section) => section.split('\n')[0])).toEqual(
      CONFIG_TOPICS.map((topic) => topic.title),
    )
    CONFIG_TOPICS.forEach((topic, index) => {
      const listed = [...(sections[index] ?? '').matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((match) => match[1])
      expect(listed, topic.title).toEqual(Object.keys(topic.properties))
    })
  })
})
