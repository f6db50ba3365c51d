import { recordErrors } from '../../http/responses.js'

/** What the provider routes share in the OpenAPI document. */
export const tags = ['Providers']
export const providerErrors = recordErrors('provider', 'Provider')
