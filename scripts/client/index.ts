import createClient, { type Client } from 'openapi-fetch'
import type { paths, webhooks } from './openapi.js'

export type { paths, webhooks }
export type ApiClient = Client<paths>

/** The body of a webhook event, as the document's `webhooks` section describes it. */
export type EventBody<E extends keyof webhooks> = webhooks[E]['post'] extends {
  requestBody: { content: { 'application/json': infer Body } }
}
  ? Body
  : never

/**
 * A client typed by the generated description of openapi.json: a path, parameter or field the API
 * does not have is a compile error. `token` is read on every request, so one client can sign in.
 */
export function createApiClient(
  baseUrl: string,
  token: () => string | undefined = () => undefined,
): ApiClient {
  const client = createClient<paths>({ baseUrl })
  client.use({
    onRequest({ request }) {
      const current = token()
      if (current) request.headers.set('authorization', `Bearer ${current}`)
      return request
    },
  })
  return client
}
