import { readFileSync } from 'node:fs'
import { accessRuleOf, type RouteAccess, routeKey } from '../../src/access/route-access.js'
import { dereference } from './dereference.js'
import type { JsonSchema } from './schema-arbitrary.js'

interface OpenApiParameter {
  in: 'path' | 'query' | 'header'
  name: string
  required?: boolean
  schema: JsonSchema
}

interface OpenApiOperation {
  parameters?: OpenApiParameter[]
  requestBody?: { required?: boolean; content: Record<string, { schema: JsonSchema }> }
  responses: Record<string, { content?: Record<string, { schema: JsonSchema }> }>
}

export interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'
  /** The OpenAPI path, `{id}` style. */
  path: string
  /** `METHOD /path` as the document writes it, for test names. */
  name: string
  operation: OpenApiOperation
  /** Who may call it: the route table's entry; routes outside /api (health, OpenID) are public. */
  access: RouteAccess
}

/**
 * Every operation of the committed OpenAPI document (a test keeps it equal to the app's), so that
 * suites built on it are collected per operation and cover a new route without being told.
 */
export function documentedOperations(): Operation[] {
  const document = dereference(
    JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as {
      paths: Record<string, Record<string, OpenApiOperation>>
    },
  )
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => {
      const upper = method.toUpperCase() as Operation['method']
      const key = routeKey(upper, path.replace(/\{([^}]+)\}/g, ':$1'))
      return {
        method: upper,
        path,
        name: `${upper} ${path}`,
        operation,
        access: accessRuleOf(key) ?? { allow: 'public' },
      }
    }),
  )
}
