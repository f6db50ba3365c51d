import type { FastifyRequest } from 'fastify'
import { AppError } from '../errors.js'
import type { Principal } from '../identity/principal.js'

/** The caller of a route that requires a token; the access guard has already authenticated it. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError('AUTH_001', 'Authentication required')
  return request.principal
}

/** The token of an `Authorization: Bearer <token>` header, if the request has one. */
export function bearerTokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization
  return header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined
}
