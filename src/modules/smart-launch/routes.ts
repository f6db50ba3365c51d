import formbody from '@fastify/formbody'
import type { FastifyPluginAsync } from 'fastify'
import { AuthorizationRequest as AuthorizationQuery } from '../../../schemas/smart-launch.js'
import type { FhirScopeRules } from '../../access/grantable-scopes.js'
import { AppError } from '../../errors.js'
import { authorizationFlow } from './authorization-flow.js'
import { authorizationParametersOf } from './authorization-request.js'
import { consentRoutes } from './consent-routes.js'
import { AUTHORIZE, pageKit, pageResponses, tags } from './page-kit.js'
import { errorPage } from './pages.js'
import { pickerRoutes } from './picker-routes.js'
import { signInRoutes } from './sign-in-routes.js'

interface LaunchRouteOptions {
  issuerUrl: string
  /** The FHIR base URL, which an authorization request's `aud` must name. */
  fhirBase: string
  fhirScopes: FhirScopeRules
  /** The service's encryption key, from which the forms' CSRF key is derived. */
  encryptionKey: Buffer
}

/**
 * The authorization endpoint of SMART App Launch (RFC 6749 §4.1 with PKCE) at Keycloak's path, and
 * the pages it shows: sign-in (with the temporary-password change), the patient picker and
 * consent. Plain HTML, no script, never framed; every form carries a CSRF token.
 */
const launchRoutes: FastifyPluginAsync<LaunchRouteOptions> = async (
  app,
  { issuerUrl, fhirBase, fhirScopes, encryptionKey },
) => {
  await app.register(formbody)
  const kit = pageKit({ issuerUrl, encryptionKey })
  // Whatever fails here is a page, for the person in front of it: never JSON, never a redirect.
  app.setErrorHandler((error, request, reply) => {
    // The rate limit's refusal (RATE_001) is an AppError, which carries its status as `status`.
    const status =
      error instanceof AppError ? error.status : ((error as { statusCode?: number }).statusCode ?? 500)
    if (status >= 500)
      request.log.error({ err: { message: (error as Error).message } }, 'authorization page failed')
    const message =
      status === 429
        ? 'Too many requests. Wait a minute, then try again.'
        : status >= 500
          ? 'The service could not complete this step. Try again later.'
          : 'The request could not be read.'
    return kit.show(reply, status >= 400 ? status : 500, errorPage('Cannot continue', message))
  })
  const flow = authorizationFlow(app, kit, { fhirBase, fhirScopes })

  const authorizationSchema = (method: string) => ({
    tags,
    operationId: `authorize${method}`,
    summary: `Authorization endpoint (SMART App Launch, ${method})`,
    description:
      'The authorization code flow with PKCE (S256 only). Shows the sign-in page to a browser not signed in; for a member of the practice in a standalone launch with `launch/patient`, the patient picker; then the consent page unless the user’s standing grant to the app covers what it asks, then returns to the app’s redirect URI with a code (single use, 60 s). Errors return there too once the app and redirect URI are known; before, they are shown as a page.',
    security: [],
  })

  // RFC 6749 §3.1: the authorization endpoint takes GET, and POST with the same parameters.
  app.get(
    AUTHORIZE,
    { schema: { ...authorizationSchema('Get'), querystring: AuthorizationQuery, response: pageResponses } },
    (request, reply) => flow.continueAuthorization(request, reply, authorizationParametersOf(request.query)),
  )
  app.post(
    AUTHORIZE,
    {
      schema: {
        ...authorizationSchema('Post'),
        consumes: ['application/x-www-form-urlencoded'],
        body: AuthorizationQuery,
        response: pageResponses,
      },
    },
    (request, reply) => flow.continueAuthorization(request, reply, authorizationParametersOf(request.body)),
  )

  signInRoutes(app, kit, flow)
  consentRoutes(app, kit, flow)
  pickerRoutes(app, kit, flow)
}

export default launchRoutes
