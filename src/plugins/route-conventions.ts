import type { TSchema } from '@sinclair/typebox'
import type { FastifyPluginAsync, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { hasAnyRole } from '../access/roles.js'
import { accessRuleOf, describeAccess, type RouteAccess, routeKey } from '../access/route-access.js'
import { isSmartShaped } from '../access/smart-scopes.js'
import { forbidden } from '../errors.js'
import { errorResponse, nameResponse } from '../http/responses.js'
import { isAppClient } from '../identity/app-client-ids.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** `METHOD /path` of every registered /api route, in registration order. */
    apiRoutes: string[]
  }
  interface FastifyContextConfig {
    /** Every member of the body is optional, so the body itself may be left out. */
    optionalBody?: boolean
  }
}

/** Error statuses any route of this shape can produce, whatever its handler does. */
const SERVER_ERROR = errorResponse(
  500,
  'The service failed (SYS_001, 500) or a dependency such as the database is unavailable (SYS_002, 503)',
)
nameResponse('5XX', SERVER_ERROR.description, 'ServerError')

function standardErrors(route: RouteOptions, access: RouteAccess): Record<number | string, TSchema> {
  const schema = route.schema ?? {}
  const statuses = [429]
  if (access.allow !== 'public') statuses.push(401, 403)
  if (schema.querystring || schema.params) statuses.push(400)
  if (schema.body) statuses.push(400, 413, 415, 422)
  return {
    ...Object.fromEntries(statuses.map((status) => [status, errorResponse(status)])),
    // 500 (SYS_001) and 503 (SYS_002) alike: one range, as any route may fail either way.
    '5xx': SERVER_ERROR,
  }
}

function guard(access: RouteAccess): onRequestHookHandler {
  const { allow } = access
  return async function requireAccess(this, request: FastifyRequest) {
    const principal = request.principal ?? (await this.authenticate(request))
    if (allow === 'public') return
    // The user granted a SMART app FHIR access only: its tokens reach no /api route at all.
    if (isAppClient(principal.clientId)) {
      throw forbidden('A SMART app’s token reaches only the FHIR API (/fhir/R4)')
    }
    if (allow === 'authenticated') return
    if (!hasAnyRole(principal.authorities, allow)) {
      throw forbidden(`This operation requires one of the roles: ${allow.join(', ')}`)
    }
    // SMART scopes name FHIR types, not these routes: a token narrowed by them would reach every
    // record its roles allow here, so it is kept to the FHIR API (fail closed). So is any token a
    // SMART app was given, whatever its scopes: the user granted the app FHIR access only.
    if (principal.scopes.some(isSmartShaped) || isAppClient(principal.clientId)) {
      throw forbidden(
        'A SMART app’s token, or one with SMART on FHIR resource scopes, reaches only the FHIR API (/fhir/R4)',
      )
    }
  }
}

/**
 * A field with a default may be left out by the caller (validation fills it in either way), so the
 * document must not list it as required: generated clients would insist on it otherwise.
 */
function defaultsOptional<T>(schema: T): T {
  const { required, properties } = (schema ?? {}) as {
    required?: string[]
    properties?: Record<string, { default?: unknown }>
  }
  if (!required || !properties) return schema
  const left = required.filter((name) => properties[name]?.default === undefined)
  if (left.length === required.length) return schema
  // A copy: schema objects are shared between routes.
  const copy = { ...schema, required: left }
  if (left.length === 0) delete (copy as { required?: string[] }).required
  return copy
}

/** A route whose body members are all optional takes a request without a body as `{}`. */
async function noBodyAsEmpty(request: FastifyRequest) {
  request.body ??= {}
}

const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value]

/**
 * Applies the access table to every /api route as it is registered: the authentication and role
 * guard, the OpenAPI security and role description, and the error responses every route can give.
 * A route missing from the table stops the app from starting.
 */
const routeConventions: FastifyPluginAsync = async (app) => {
  const apiRoutes: string[] = []
  app.decorate('apiRoutes', apiRoutes)

  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/api/')) return
    const methods = asArray(route.method)
    if (methods.length !== 1) throw new Error(`Route ${route.url} must declare exactly one method`)
    const key = routeKey(String(methods[0]), route.url)
    const access = accessRuleOf(key)
    if (!access) throw new Error(`No access rule for ${key}; add it to src/access/route-access.ts`)
    apiRoutes.push(key)

    const schema = route.schema ?? {}
    route.schema = {
      ...schema,
      ...(schema.querystring ? { querystring: defaultsOptional(schema.querystring) } : {}),
      ...(schema.body ? { body: defaultsOptional(schema.body) } : {}),
      description: [schema.description, describeAccess(access)].filter(Boolean).join('\n\n'),
      // The document's default is the bearer token; public operations say they need none.
      ...(access.allow === 'public' ? { security: [] } : {}),
      response: { ...standardErrors(route, access), ...(schema.response as object) },
    }
    route.config = { ...route.config, access }
    // After the rate limiter's hook, which is already in place, so floods of bad tokens are counted too.
    if (access.allow !== 'public') route.onRequest = [...asArray(route.onRequest), guard(access)]
    if (route.config.optionalBody) route.preValidation = [...asArray(route.preValidation), noBodyAsEmpty]
  })
}

export default fp(routeConventions, { name: 'route-conventions', dependencies: ['auth'] })
