import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { OpenAPIV3_1 } from 'openapi-types'
import { PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX } from '../../schemas/common.js'
import { EVENT_DATA, EventPayload, TEST_EVENT, TestEventData } from '../../schemas/events.js'
import { ERRORS } from '../errors.js'
import { withComponents } from '../http/openapi-components.js'
import { precompressedJson } from './compression.js'
import { documentRoute } from './openapi-route.js'

/**
 * The explorer's pages and scripts, in its package. They are named here rather than found by the
 * package itself, so that the production bundle can hold its code: loaded from node_modules, it and
 * its dependencies (a second YAML library among them) were a share of every start
 * (docs/performance-log.md).
 */
const explorerFiles = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@fastify/swagger-ui/package.json')),
  'static',
)

const errorTable = [
  '| Code | Status | Meaning |',
  '|---|---|---|',
  ...Object.entries(ERRORS).map(([code, { status, message }]) => `| ${code} | ${status} | ${message} |`),
].join('\n')

const description = `Electronic health records REST API.

Every \`/api\` response is an envelope: \`success\`, \`message\`, and \`data\` on success or \`error\` (\`code\`, \`details\`) on failure. Lists return a Page in \`data\` (\`content\`, \`pageable\`, \`totalElements\`, \`totalPages\`, \`first\`, \`last\`); \`page\` is 0-indexed, \`size\` defaults to ${PAGE_SIZE_DEFAULT} and may be at most ${PAGE_SIZE_MAX}, \`sort\` is \`field,asc|desc\`.

Validation: malformed parameters or JSON are 400; a JSON body that parses but fails validation is 422. Every problem is reported at once (up to 20): \`error.details\` joins them in words, naming allowed values and formats, and \`error.fields\` lists them as \`{path, message}\`. VAL_002 when any problem is a missing required field, whatever else is wrong; VAL_001 otherwise. Unknown fields and parameters are rejected.

Every response carries \`X-Request-Id\` (the caller's, when it is safe to echo, else a new one); quote it when reporting a problem.

Errors:

${errorTable}

VAL_001 is also used with 413 (body too large) and 415 (unsupported Content-Type).

Webhooks: an organization's administrators register addresses that receive its events (see \`webhooks\` for every event's body). Each delivery is a POST of \`{event, timestamp, data}\` signed per Standard Webhooks (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`); any 2xx answer within the timeout is success, anything else is retried with backoff, then marked FAILED and kept for redelivery. Delivery is at least once and in no guaranteed order: deduplicate on \`webhook-id\`, and order by \`timestamp\` if needed.`

const signatureHeaders = (
  [
    [
      'webhook-id',
      'Message id: the same on every attempt and redelivery of this delivery; deduplicate on it',
    ],
    ['webhook-timestamp', 'Unix time in seconds of this attempt; reject values far from now to stop replays'],
    [
      'webhook-signature',
      '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` under the secret; during a secret rotation two signatures, space-separated, and either may match',
    ],
  ] as const
).map(([name, description]) => ({
  name,
  in: 'header' as const,
  required: true,
  description,
  schema: { type: 'string' as const },
}))

const camelCase = (event: string) =>
  event.replace(/[._]([a-z])/g, (_match, letter: string) => letter.toUpperCase())

const eventWebhook = (event: string, data: TSchema) => ({
  post: {
    tags: ['Webhooks'],
    operationId: `${camelCase(event)}Event`,
    summary: event,
    // The receiver authenticates the call by its signature headers, not by a security scheme.
    security: [],
    description: data.description,
    parameters: signatureHeaders,
    requestBody: {
      required: true,
      content: { 'application/json': { schema: EventPayload(event as typeof TEST_EVENT, data) } },
    },
    responses: {
      '2XX': { description: 'Received: any 2xx answer counts as delivered' },
      default: { description: 'Any other answer, a redirect, a timeout or a connection error is retried' },
    },
  },
})

/** The OpenAPI 3.1 `webhooks` section, from the same schemas the outbox writes. */
const webhooks = Object.fromEntries(
  [...Object.entries(EVENT_DATA), [TEST_EVENT, TestEventData] as const].map(([event, data]) => [
    event,
    eventWebhook(event, data),
  ]),
)

/**
 * The explorer's pages replace the API's `default-src 'none'` policy (security-headers.ts) with one
 * that allows what they load from this service: scripts, styles, the document and the data-URI
 * images of its stylesheet. Swagger UI sets some styles inline; nothing else is inline or remote.
 */
const EXPLORER_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self' 'unsafe-inline'",
].join('; ')

/** Where the explorer's page and files are served. */
export const EXPLORER_PREFIX = '/swagger-ui'

/** The OpenAPI 3.1 document at /v3/api-docs and the explorer at /swagger-ui.html. */
const openapi: FastifyPluginAsync = async (app) => {
  await app.register(swagger, {
    // Untagged routes (the metrics endpoint, the explorer's own files) stay out of the document.
    hideUntagged: true,
    transform: ({ schema, url, route }) => ({ schema: documentRoute(schema, url, route), url }),
    transformObject: (documentObject) =>
      withComponents((documentObject as { openapiObject: OpenAPIV3_1.Document }).openapiObject),
    openapi: {
      openapi: '3.1.0',
      jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
      info: { title: 'EHR Service API', version: '0.1.0', description },
      // Relative: the document describes whichever address it is served from.
      servers: [{ url: '/' }],
      security: [{ bearerAuth: [] }],
      webhooks,
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
      tags: [
        { name: 'Authentication', description: 'Sign-in, sessions, passwords and the current user' },
        {
          name: 'Users',
          description: 'The organization’s people: accounts, roles, deactivation (ADMIN)',
        },
        {
          name: 'Clients',
          description: 'Integration clients (client credentials): secrets, rotation, roles (ADMIN)',
        },
        { name: 'Patients', description: 'Patient demographics and registration' },
        {
          name: 'Clinical records',
          description: 'Vital signs, lab results, conditions, allergies, medications, chart',
        },
        { name: 'Documents', description: 'Patient documents: streamed upload and download' },
        { name: 'Telehealth', description: 'Video rooms (Jitsi) for visits' },
        { name: 'Messages', description: 'Secure messages between users of one organization' },
        { name: 'Billing', description: 'Invoices and payments, in minor units of a currency' },
        { name: 'Webhooks', description: 'Event notifications to the organization’s own systems' },
        {
          name: 'Events',
          description: 'The change feed: the organization’s events in commit order, with long-poll',
        },
        { name: 'Providers', description: 'Providers, their working hours and schedules' },
        { name: 'Appointments', description: 'Booking, rescheduling, status changes and free slots' },
        { name: 'Encounters', description: 'Clinical visits: SOAP notes, signing and addenda' },
        { name: 'Audit', description: 'Who accessed which records: the organization’s audit trail' },
        { name: 'Operations', description: 'Health probes' },
        {
          name: 'OpenID Connect',
          description:
            'The embedded token issuer, at the paths of a Keycloak realm (absent with an external issuer)',
        },
      ],
    },
  })
  // Built once by @fastify/swagger and fixed from then on: sent from memory, compressed and tagged.
  const sendDocument = precompressedJson(() => app.swagger())
  await app.register(swaggerUi, {
    routePrefix: EXPLORER_PREFIX,
    baseDir: explorerFiles,
    logo: { type: 'image/svg+xml', content: await readFile(path.join(explorerFiles, 'logo.svg')) },
    uiConfig: {
      // Nothing from other sites: the explorer's scripts, styles and the document are served here.
      validatorUrl: null,
      // Each schema shows inside the operations that use it. The Schemas section would list all of
      // them (every named schema) again on load: measurably more start-up work for the page
      // (docs/performance-log.md).
      defaultModelsExpandDepth: -1,
      // "Try it out" shows how long the request took.
      displayRequestDuration: true,
    },
    staticCSP: EXPLORER_CSP,
    // The explorer reads the document from its own /json route: answered as /v3/api-docs is.
    uiHooks: {
      onRequest: async (request, reply) => {
        if (request.routeOptions.url === `${EXPLORER_PREFIX}/json`) return sendDocument(request, reply)
      },
    },
  })

  app.get('/v3/api-docs', { schema: { hide: true } }, sendDocument)
  app.get(`${EXPLORER_PREFIX}.html`, { schema: { hide: true } }, async (_request, reply) =>
    reply.redirect(`${EXPLORER_PREFIX}/`),
  )
}

export default fp(openapi, { name: 'openapi' })
