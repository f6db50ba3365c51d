import type { TObject, TSchema } from '@sinclair/typebox'
import { CONFIG_TOPICS } from '../../src/config.js'
import { code, generatedNotice, table } from './markdown.js'

const numberRange = (schema: TSchema) => {
  const { minimum, maximum } = schema as { minimum?: number; maximum?: number }
  if (minimum !== undefined && maximum !== undefined) return ` ${minimum}–${maximum}`
  if (minimum !== undefined) return ` ≥ ${minimum}`
  if (maximum !== undefined) return ` ≤ ${maximum}`
  return ''
}

/** What a variable accepts, read from its TypeBox schema. */
function describeType(schema: TSchema): string {
  const literals = (schema.anyOf as TSchema[] | undefined)?.map((member) => member.const)
  if (literals?.every((value) => typeof value === 'string')) {
    return `one of ${literals.map((value) => code(String(value))).join(', ')}`
  }
  switch (schema.type) {
    case 'integer':
      return `integer${numberRange(schema)}`
    case 'number':
      return `number${numberRange(schema)}`
    case 'boolean':
      return `${code('true')} or ${code('false')}`
    case 'string': {
      if (schema.pattern) return `text matching ${code(schema.pattern)}`
      if (schema.minLength === 1) return 'non-empty text'
      if (schema.minLength) return `text of at least ${schema.minLength} characters`
      return 'text'
    }
    default:
      throw new Error(`No description for a configuration schema of type ${String(schema.type)}`)
  }
}

function describeDefault(schema: TSchema, required: boolean): string {
  if (!required || schema.default === undefined) return 'unset'
  if (schema.default === '') return 'empty'
  return code(String(schema.default))
}

function topicSection(topic: TObject): string {
  const required = new Set<string>(topic.required ?? [])
  const rows = Object.entries(topic.properties as Record<string, TSchema>).map(([name, property]) => [
    code(name),
    describeType(property),
    describeDefault(property, required.has(name)),
    property.description ?? '(undocumented)',
  ])
  const intro = topic.description ? `${topic.description}\n\n` : ''
  return `## ${topic.title}\n\n${intro}${table(['Variable', 'Accepts', 'Default', 'Meaning'], rows)}\n`
}

/** docs/reference/configuration.md: every variable, by topic, in the order of `CONFIG_TOPICS`. */
export function configurationReference(topics: readonly TObject[] = CONFIG_TOPICS): string {
  return `${generatedNotice('the topics of src/config/ (`CONFIG_TOPICS` in src/config.ts)')}

# Configuration

Every setting comes from an environment variable, validated once at start: a bad value stops the
service with a message naming the variable (values of secrets are not repeated). An empty value
counts as unset. \`.env.example\` lists the same variables with their defaults, grouped by the same
topics.

${topics.map(topicSection).join('\n')}`
}
