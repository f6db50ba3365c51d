import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { FastifyInstance } from 'fastify'
import { ErrorEnvelope } from '../../schemas/common.js'
import { dereference } from './dereference.js'

interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      { responses?: Record<string, { description?: string; content?: Record<string, { schema: object }> }> }
    >
  >
}

export interface ContractViolation {
  request: string
  status: number
  problem: string
}

/** Violations seen since the last drain; the setup file fails the test that produced any. */
const violations: ContractViolation[] = []

export function drainViolations(): ContractViolation[] {
  return violations.splice(0, violations.length)
}

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')

/**
 * Checks responses against the app's own OpenAPI document with an independent validator (Ajv,
 * JSON Schema 2020-12) on the bytes the client receives, not on what the serializer was given.
 */
export function createResponseChecker(document: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  const compiled = new Map<string, ValidateFunction>()
  const unroutedError = ajv.compile(ErrorEnvelope)

  return (method: string, routeUrl: string | undefined, status: number, body: string): string | undefined => {
    if (!routeUrl) {
      return unroutedError(JSON.parse(body))
        ? undefined
        : `unrouted error body: ${ajv.errorsText(unroutedError.errors)}`
    }
    const operation = document.paths[toOpenApiPath(routeUrl)]?.[method.toLowerCase()]
    if (!operation) return `${method} ${routeUrl} is not in the document`
    const key = `${method} ${routeUrl} ${status}`
    // A status the operation does not list by itself may fall in a documented range (5XX).
    const documented =
      operation.responses?.[String(status)] ?? operation.responses?.[`${String(status)[0]}XX`]
    if (!documented) return `status ${status} is not documented`
    if (status === 204 || status === 304)
      return body === '' ? undefined : `status ${status} must have no body`
    if (!documented.content) return body === '' ? undefined : `status ${status} is documented without a body`
    const schema = documented.content['application/json']?.schema
    // A documented binary response (a download): its bytes are not JSON to check.
    if (!schema) return undefined
    let validate = compiled.get(key)
    if (!validate) {
      validate = ajv.compile(schema)
      compiled.set(key, validate)
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(body)
    } catch {
      return 'body is not JSON'
    }
    return validate(parsed) ? undefined : ajv.errorsText(validate.errors)
  }
}

/** Checks every response the app sends from now on against its OpenAPI document. */
export function checkResponsesAgainstContract(app: FastifyInstance): void {
  let check: ReturnType<typeof createResponseChecker> | undefined
  app.addHook('onSend', async (request, reply, payload) => {
    if (!/^\/(api|realms)\/|^\/actuator\/health/.test(request.url)) return payload
    // CORS preflights are answered by the CORS plugin for every path; they are not operations.
    if (request.method === 'OPTIONS') return payload
    check ??= createResponseChecker(dereference(app.swagger()) as unknown as OpenApiDocument)
    // Fastify drops any payload of a 204 or 304 on the wire; what the client receives is empty.
    const body = reply.statusCode === 204 || reply.statusCode === 304 ? '' : String(payload ?? '')
    const problem = check(request.method, request.routeOptions.url, reply.statusCode, body)
    if (problem)
      violations.push({ request: `${request.method} ${request.url}`, status: reply.statusCode, problem })
    return payload
  })
}
