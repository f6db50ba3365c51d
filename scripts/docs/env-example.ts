import type { TObject, TSchema } from '@sinclair/typebox'
import { CONFIG_TOPICS } from '../../src/config.js'
import { generatedFrom } from './markdown.js'

const WIDTH = 100

/** `text` as comment lines of at most WIDTH characters, Markdown emphasis and code marks removed. */
function comment(text: string): string[] {
  const plain = text.replaceAll('**', '').replaceAll('`', '')
  const lines: string[] = []
  let line = '#'
  for (const word of plain.split(/\s+/).filter(Boolean)) {
    if (line.length > 1 && line.length + 1 + word.length > WIDTH) {
      lines.push(line)
      line = '#'
    }
    line += ` ${word}`
  }
  return [...lines, line]
}

const sentence = (text: string) => {
  const trimmed = text.trim()
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`
}

/**
 * A variable's line: an example, commented out, where the schema gives one (a setting most
 * deployments leave unset); else its default; else commented out and empty.
 */
function assignment(name: string, schema: TSchema, required: boolean): string {
  const example = (schema.examples as unknown[] | undefined)?.[0]
  if (example !== undefined) return `# ${name}=${String(example)}`
  if (required && schema.default !== undefined) return `${name}=${String(schema.default)}`
  return `# ${name}=`
}

function topicSection(topic: TObject): string {
  const required = new Set(topic.required ?? [])
  const variables = Object.entries(topic.properties as Record<string, TSchema>).map(([name, schema]) =>
    [...comment(sentence(schema.description ?? '')), assignment(name, schema, required.has(name))].join('\n'),
  )
  const intro = topic.description ? `${comment(topic.description).join('\n')}\n` : ''
  return `# --- ${topic.title} ---\n${intro}\n${variables.join('\n')}\n`
}

/** .env.example: every variable by topic, with its description and default (or an example). */
export function envExample(topics: readonly TObject[] = CONFIG_TOPICS): string {
  const header = [
    ...comment(generatedFrom('the topics of src/config/')),
    ...comment(
      'Every setting the service reads from its environment (docs/reference/configuration.md has the accepted values). Lines that are not commented out show the defaults; commented-out lines are unset unless you set them, some with an example value.',
    ),
  ]
  return `${header.join('\n')}\n\n${topics.map(topicSection).join('\n')}`
}
