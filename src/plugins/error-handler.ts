import type { ErrorObject } from 'ajv'
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { AppError, allowsStatus, type ErrorCode, fromDatabaseError } from '../errors.js'
import { errorBody } from '../http/envelope.js'
import { sentMethod } from '../http/head-requests.js'
import { routeMethods } from '../http/route-methods.js'
import { describeProblems, problemsText } from '../http/validation-messages.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The methods a request's path has under any route (`Allow`), HEAD and preflight included. */
    allowedMethods(url: string): string[]
  }
}

/**
 * Schema validation failures, every problem at once (up to 20, then a count). A body that parses
 * but breaks the schema is 422; a malformed path or query parameter (or header) is 400. Of several
 * problems, a missing required member decides the code: VAL_002 as soon as one is missing, whatever
 * else is wrong (so the code of a request without a required member never depends on its other
 * mistakes), VAL_001 when nothing is missing. `details` lists the problems in words; `fields`
 * lists them for machines.
 */
function fromValidation(error: FastifyError): AppError {
  const context = error.validationContext ?? 'body'
  const found = describeProblems((error.validation ?? []) as ErrorObject[])
  const status = context === 'body' ? 422 : 400
  const code: ErrorCode = found.missing ? 'VAL_002' : 'VAL_001'
  const details = found.problems.length > 0 ? problemsText(found, context) : error.message
  return new AppError(code, details, {
    status,
    message: context === 'body' ? undefined : 'Invalid request parameters',
    fields: found.problems,
  })
}

const FRAMEWORK_DETAILS: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'The request body is not valid JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'The request body is empty but Content-Type says application/json',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'This Content-Type is not accepted here; send application/json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  FST_ERR_BAD_URL: 'The URL is malformed',
}

/** 4xx errors raised by Fastify or a plugin (bad JSON, wrong media type, body too large, …). */
function fromClientError(error: FastifyError, status: number, bodyLimit: number): AppError {
  if (status === 401) return new AppError('AUTH_001', 'Missing or invalid bearer token')
  if (status === 404) return new AppError('RES_001', 'Resource not found')
  if (status === 413) {
    return new AppError('VAL_001', `The request body exceeds the limit of ${bodyLimit} bytes`, {
      status,
      message: 'Request body too large',
    })
  }
  // A JSON syntax error quotes the body back; nothing of a body is echoed, so use fixed texts.
  const details =
    FRAMEWORK_DETAILS[error.code] ??
    (error instanceof SyntaxError ? FRAMEWORK_DETAILS.FST_ERR_CTP_INVALID_JSON_BODY : undefined)
  return new AppError('VAL_001', details ?? 'The request could not be processed', {
    // A 4xx of the framework's that the error table does not list for VAL_001 is answered as 400,
    // and so is a 422: that status names the fields at fault, which a framework error does not.
    status: allowsStatus('VAL_001', status) && status !== 422 ? status : 400,
    message: status === 415 ? 'Unsupported media type' : 'Invalid request',
  })
}

/** What a failure means for the caller, or undefined for an unexpected one (a 500). */
export function toAppError(error: unknown, bodyLimit: number): AppError | undefined {
  if (error instanceof AppError) return error
  const fastifyError = error as FastifyError
  if (fastifyError.validation) return fromValidation(fastifyError)
  const databaseError = fromDatabaseError(error)
  if (databaseError) return databaseError
  const status = fastifyError.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500)
    return fromClientError(fastifyError, status, bodyLimit)
  return undefined
}

/**
 * Fastify's `frameworkErrors`: a URL it cannot route (malformed percent-encoding, a path parameter
 * over the router's length limit) is answered before any route or error handler runs, with a body
 * of Fastify's own and, for a long parameter, an undocumented 414. This keeps those in the envelope
 * as the 400 every route documents.
 */
export function frameworkErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply) {
  const details =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path parameter is too long'
      : (FRAMEWORK_DETAILS[error.code] ?? 'The request could not be routed')
  const appError = new AppError('VAL_001', details, { status: 400, message: 'Invalid request' })
  return reply.code(400).send(errorBody(appError))
}

/**
 * What is safe to log about an unexpected error and its cause: no request data, no driver `detail`
 * with values.
 */
function loggable(error: unknown): Record<string, unknown> {
  const { name, message, code, stack, cause } = (error ?? {}) as Error & { code?: string }
  return { type: name, code, message, stack, ...(cause === undefined ? {} : { cause: loggable(cause) }) }
}

/**
 * A request whose path exists under other methods only (RFC 9110 §15.5.6): the `Allow` header's
 * value and what to tell the caller. Undefined when the path has no route, or has one for this
 * method that found nothing (a file the explorer does not have).
 */
export function wrongMethod(request: FastifyRequest): { allow: string; details: string } | undefined {
  const allowed = request.server.allowedMethods(request.url)
  if (allowed.length === 0 || allowed.includes(request.method)) return undefined
  const allow = allowed.join(', ')
  const path = request.url.split('?')[0]
  return { allow, details: `${sentMethod(request.raw)} is not allowed on ${path}; allowed: ${allow}` }
}

/** The only place a failure becomes a response: always the envelope, never a stack or SQL text. */
const errorHandler: FastifyPluginAsync<{ bodyLimit: number }> = async (app, { bodyLimit }) => {
  // Every route added from here on (the CORS preflight route, registered before, is asked for apart).
  const methods = routeMethods()
  app.addHook('onRoute', (route) => methods.add(route.method, route.url))
  let preflight: boolean | undefined
  app.decorate('allowedMethods', (url: string) => {
    const allowed = methods.of(url)
    // The CORS plugin's route answers preflights on every path (its '*' is stored as '/*').
    preflight ??= app.hasRoute({ method: 'OPTIONS', url: '/*' })
    return preflight && allowed.length > 0 ? [...allowed, 'OPTIONS'].sort() : allowed
  })

  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    let appError = toAppError(error, bodyLimit)
    if (!appError) {
      request.log.error({ err: loggable(error) }, 'unhandled error')
      appError = new AppError('SYS_001', `An unexpected error occurred; quote request id ${request.id}`)
    } else if (appError.code === 'SYS_002') {
      request.log.error({ err: loggable(error) }, appError.message)
    }
    return reply.code(appError.status).send(errorBody(appError))
  })

  app.setNotFoundHandler((request, reply) => {
    const wrong = wrongMethod(request)
    if (wrong) {
      const error = new AppError('RES_001', wrong.details, { status: 405, message: 'Method not allowed' })
      return reply.code(405).header('allow', wrong.allow).send(errorBody(error))
    }
    const error = new AppError(
      'RES_001',
      `No route ${sentMethod(request.raw)} ${request.url.split('?')[0]}`,
      {
        message: 'Route not found',
      },
    )
    return reply.code(404).send(errorBody(error))
  })
}

export default fp(errorHandler, { name: 'error-handler' })
