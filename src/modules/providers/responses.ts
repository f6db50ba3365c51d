import { errorResponse } from '../../http/responses.js'

/** What the provider routes share in the OpenAPI document. */
export const tags = ['Providers']
export const notFound = errorResponse(404, 'No such provider (RES_001)', 'ProviderNotFound')
export const otherOrganization = errorResponse(
  403,
  'Missing role, or the provider belongs to another organization (AUTH_003)',
  'ProviderForbidden',
)
