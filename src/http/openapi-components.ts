import { isDeepStrictEqual } from 'node:util'
import { responseName } from './responses.js'
import { STATUS_CODES } from './status-codes.js'

type Node = Record<string, unknown>
type Components = Record<'schemas' | 'parameters' | 'responses' | 'headers', Record<string, unknown>>

/** Marks a request body the route lets callers leave out; the document build reads and drops it. */
export const OPTIONAL_BODY = 'x-optional-body'

const SCHEMAS = '#/components/schemas/'
/** Members of a schema that hold data (examples, defaults, enums), not schemas: never rewritten. */
const DATA_MEMBERS = new Set(['example', 'examples', 'default', 'const', 'enum'])

const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const refTo = (section: keyof Components, name: string) => ({ $ref: `#/components/${section}/${name}` })

const referencedName = (schema: unknown): string | undefined => {
  const ref = isNode(schema) ? schema.$ref : undefined
  return typeof ref === 'string' && ref.startsWith(SCHEMAS) ? ref.slice(SCHEMAS.length) : undefined
}

const pascalCase = (text: string) =>
  text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0]?.toUpperCase() + word.slice(1))
    .join('')

/**
 * The name of an unnamed schema whose shape says what it is: the spec's envelope around a named
 * record, a list of them or a page of them, and the page itself.
 */
function derivedName(schema: Node): string | undefined {
  const properties = isNode(schema.properties) ? schema.properties : undefined
  if (!properties) return undefined
  const content = properties.content
  if (isNode(content) && isNode(properties.pageable)) {
    const item = referencedName(content.items)
    return item && `${item}Page`
  }
  if (!isNode(properties.success) || !isNode(properties.message) || !('data' in properties)) return undefined
  const data = properties.data as Node
  if (data.type === 'null') return 'EmptyEnvelope'
  const named = referencedName(data) ?? (data.type === 'array' ? referencedName(data.items) : undefined)
  if (!named) return undefined
  return data.type === 'array' ? `${named}ListEnvelope` : `${named}Envelope`
}

const isPage = (schema: Node) =>
  isNode(schema.properties) && isNode(schema.properties.content) && isNode(schema.properties.pageable)

/**
 * A page as what every page has (`PageInfo`: paging, totals, sync cursor) and what this one holds
 * (`content`, and `deleted` where records can be removed).
 */
function pageOnInfo(page: Node): Node {
  const { content, deleted, ...info } = page.properties as Node
  const { title: _, properties: __, required, ...rest } = page
  const held = { content, ...(deleted ? { deleted } : {}) }
  return {
    allOf: [refTo('schemas', PAGE_INFO)],
    type: 'object',
    required: ['content'],
    properties: held,
    [PAGE_INFO]: {
      ...rest,
      properties: info,
      required: (required as string[]).filter((name) => name !== 'content'),
    },
  }
}

const PAGE_INFO = 'PageInfo'

const COMBINATORS = ['anyOf', 'oneOf', 'allOf', '$ref', 'not']

/**
 * `anyOf: [X, {type: 'null'}]`, as TypeBox writes a nullable value, said the short way JSON Schema
 * 2020-12 allows for a plain X: `type: [X's type, 'null']` (and null among X's `enum`).
 */
function withNullType(node: Node): Node {
  const options = node.anyOf
  if (!Array.isArray(options) || options.length !== 2) return node
  const nullAt = options.findIndex((option) => isDeepStrictEqual(option, { type: 'null' }))
  const value = options[1 - nullAt] as Node | undefined
  if (nullAt < 0 || !isNode(value) || typeof value.type !== 'string') return node
  if (COMBINATORS.some((keyword) => keyword in value)) return node
  const { anyOf: _, ...outer } = node
  if (Object.keys(outer).some((key) => key in value)) return node
  return {
    ...outer,
    ...value,
    type: [value.type, 'null'],
    ...(Array.isArray(value.enum) ? { enum: [...value.enum, null] } : {}),
  }
}

/**
 * Moves every titled schema (TypeBox's `title`), and every envelope or page of one, to
 * `components.schemas` under that name, replacing each use with a `$ref`. The same name on two
 * different schemas is a mistake in the schemas (say, a derived schema that kept its source's
 * title) and stops the build.
 */
function schemaHoister(schemas: Record<string, unknown>) {
  /** The reference to `node` under `name`; a use that describes itself keeps its description. */
  function register(name: string, { title: _, ...schema }: Node): Node {
    const { [PAGE_INFO]: info, ...node } = schema
    if (isNode(info)) register(PAGE_INFO, info)
    const existing = schemas[name] as Node | undefined
    if (existing === undefined) schemas[name] = node
    const { description: ownDescription, ...rest } = node
    const { description: componentDescription, ...component } = (existing ?? node) as Node
    if (!isDeepStrictEqual(component, rest))
      throw new Error(
        `Two different schemas are named ${name}: give one of them a title of its own (${JSON.stringify(component)} and ${JSON.stringify(rest)})`,
      )
    if (ownDescription === componentDescription || ownDescription === undefined) return refTo('schemas', name)
    if (componentDescription === undefined) {
      schemas[name] = node
      return refTo('schemas', name)
    }
    return { ...refTo('schemas', name), description: ownDescription }
  }

  function hoist(value: unknown): unknown {
    if (Array.isArray(value)) return value.map(hoist)
    if (!isNode(value)) return value
    const node: Node = {}
    for (const [key, member] of Object.entries(value))
      node[key] = DATA_MEMBERS.has(key) ? member : hoist(member)
    const compact = withNullType(node)
    const name = typeof compact.title === 'string' ? compact.title : derivedName(compact)
    if (!name) return compact
    return register(name, isPage(compact) ? pageOnInfo(compact) : compact)
  }
  return hoist
}

/** Each media type's schema of a request body or response, hoisted. */
function hoistContent(holder: Node | undefined, hoist: (value: unknown) => unknown) {
  const content = holder?.content
  if (!isNode(content)) return
  for (const media of Object.values(content)) {
    if (!isNode(media) || !isNode(media.schema)) continue
    // @fastify/swagger repeats a response's description inside its schema; the response has it.
    const { description, [OPTIONAL_BODY]: optional, ...schema } = media.schema
    if (optional === true && holder) holder.required = false
    media.schema = hoist(description === holder?.description ? schema : { ...schema, description })
  }
}

/** Every operation of `paths` and `webhooks`. */
function operationsOf(document: Node): Node[] {
  return ['paths', 'webhooks'].flatMap((section) =>
    Object.values((document[section] ?? {}) as Record<string, Node>).flatMap((item) =>
      Object.values(item).filter(isNode),
    ),
  )
}

const stableKey = (value: unknown) => JSON.stringify(value)

/**
 * Shares what several operations declare identically under `components`: each parameter (named by
 * where it is and its name) used more than once, and each response named with `nameResponse`.
 * Where two different ones would take one name, the more used one gets it and the other stays.
 */
function shareRepeated(
  items: { holder: unknown[] | Node; key: string | number; value: Node; name: string | undefined }[],
  section: Record<string, unknown>,
  sectionName: keyof Components,
) {
  const groups = new Map<string, { name: string; value: Node; uses: typeof items }>()
  for (const item of items) {
    if (item.name === undefined) continue
    const key = `${item.name}\u0000${stableKey(item.value)}`
    const group = groups.get(key) ?? { name: item.name, value: item.value, uses: [] }
    group.uses.push(item)
    groups.set(key, group)
  }
  const chosen = [...groups.values()]
    .filter((group) => group.uses.length > 1)
    .sort((a, b) => b.uses.length - a.uses.length)
  for (const group of chosen) {
    if (section[group.name] !== undefined) continue
    section[group.name] = group.value
    for (const use of group.uses)
      (use.holder as Record<string | number, unknown>)[use.key] = refTo(sectionName, group.name)
  }
}

function parameterName(parameter: Node): string {
  const where = { path: 'Path', query: 'Query', header: 'Header', cookie: 'Cookie' }[String(parameter.in)]
  return `${pascalCase(String(parameter.name))}${where ?? ''}`
}

const DEFAULT_DESCRIPTION = 'Default Response'

/**
 * A success answer in the envelope is described by what it holds (`PatientEnvelope`: "The
 * Patient") unless its route says more, and is named after its schema, so that the operations
 * answering the same thing share it. Returns that name.
 */
function describeSuccess(status: string, response: Node): string | undefined {
  const code = Number(status)
  if (!(code >= 200 && code < 300)) return undefined
  const media = isNode(response.content) ? response.content['application/json'] : undefined
  const schemaName = isNode(media) ? referencedName(media.schema) : undefined
  if (!schemaName) return undefined
  if (response.description === DEFAULT_DESCRIPTION) {
    const held = schemaName.replace(/Envelope$/, '')
    const what = held === 'Empty' ? 'Done' : `The \`${held}\``
    response.description = code === 201 ? `Created. ${what}` : what
  }
  return code === 200 ? schemaName : `${schemaName}${pascalCase(STATUS_CODES[code] ?? status)}`
}

/** The headers of every response, shared by name under `components.headers`. */
function shareHeaders(responses: Node[], headers: Record<string, unknown>) {
  for (const response of responses) {
    if (!isNode(response.headers)) continue
    for (const [name, header] of Object.entries(response.headers)) {
      const existing = headers[name]
      if (existing === undefined) headers[name] = header
      else if (!isDeepStrictEqual(existing, header)) continue
      response.headers[name] = refTo('headers', name)
    }
  }
}

/** The document with shared schemas, parameters, responses and headers moved under `components`. */
export function withComponents<T extends object>(source: T): T {
  // A copy: the document is built from schema objects the routes and other apps share.
  const document = structuredClone(source)
  const root = document as unknown as Node & { components?: Partial<Components> }
  root.components ??= {}
  const components = root.components as Components
  for (const section of ['schemas', 'parameters', 'responses', 'headers'] as const) components[section] ??= {}
  const hoist = schemaHoister(components.schemas)

  const operations = operationsOf(root)
  const parameters: Parameters<typeof shareRepeated>[0] = []
  const responses: Parameters<typeof shareRepeated>[0] = []
  for (const operation of operations) {
    for (const [index, parameter] of ((operation.parameters ?? []) as Node[]).entries()) {
      // A parameter's schema stays inline: @fastify/swagger moves its examples and description
      // up to the parameter, so it no longer matches the named schema it came from.
      if (isNode(parameter.schema)) {
        const { title: _, ...schema } = parameter.schema
        parameter.schema = hoist(schema)
      }
      parameters.push({
        holder: operation.parameters as Node[],
        key: index,
        value: parameter,
        name: parameterName(parameter),
      })
    }
    hoistContent(operation.requestBody as Node | undefined, hoist)
    for (const [status, response] of Object.entries((operation.responses ?? {}) as Record<string, Node>)) {
      hoistContent(response, hoist)
      const success = describeSuccess(status, response)
      responses.push({
        holder: operation.responses as Node,
        key: status,
        value: response,
        name: success ?? responseName(status, String(response.description)),
      })
    }
  }
  shareHeaders(
    responses.map(({ value }) => value),
    components.headers,
  )
  shareRepeated(parameters, components.parameters, 'parameters')
  shareRepeated(responses, components.responses, 'responses')
  for (const section of Object.keys(components) as (keyof Components)[]) {
    if (Object.keys(components[section] ?? {}).length === 0) delete components[section]
    else
      components[section] = Object.fromEntries(
        Object.entries(components[section]).sort(([a], [b]) => a.localeCompare(b)),
      )
  }
  return document
}
