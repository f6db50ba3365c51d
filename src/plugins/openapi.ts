import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { PAGE_SIZE_DEFAULT, PAGE_SIZE_MAX } from '../../schemas/common.js'
import { ERRORS } from '../errors.js'

const errorTable = [
  '| Code | Status | Meaning |',
  '|---|---|---|',
  ...Object.entries(ERRORS).map(([code, { status, message }]) => `| ${code} | ${status} | ${message} |`),
].join('\n')

const description = `Electronic health records REST API.

Every \`/api\` response is an envelope: \`success\`, \`message\`, and \`data\` on success or \`error\` (\`code\`, \`details\`) on failure. Lists return a Page in \`data\` (\`content\`, \`pageable\`, \`totalElements\`, \`totalPages\`, \`first\`, \`last\`); \`page\` is 0-indexed, \`size\` defaults to ${PAGE_SIZE_DEFAULT} and may be at most ${PAGE_SIZE_MAX}, \`sort\` is \`field,asc|desc\`.

Validation: malformed parameters or JSON are 400; a JSON body that parses but fails validation is 422. A missing required field is VAL_002, any other validation failure VAL_001. Unknown fields and parameters are rejected.

Every response carries \`X-Request-Id\` (the caller's, when it is safe to echo, else a new one); quote it when reporting a problem.

Errors:

${errorTable}

VAL_001 is also used with 413 (body too large) and 415 (unsupported Content-Type).`

/** The OpenAPI 3.1 document at /v3/api-docs and the explorer at /swagger-ui.html. */
const openapi: FastifyPluginAsync = async (app) => {
  await app.register(swagger, {
    // Untagged routes (the metrics endpoint, the explorer's own files) stay out of the document.
    hideUntagged: true,
    openapi: {
      openapi: '3.1.0',
      info: { title: 'EHR Service API', version: '0.1.0', description },
      // Relative: the document describes whichever address it is served from.
      servers: [{ url: '/' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      },
      tags: [
        { name: 'Authentication', description: 'Sign-in, sessions, passwords and the current user' },
        { name: 'Patients', description: 'Patient demographics and registration' },
        { name: 'Providers', description: 'Providers, their working hours and schedules' },
        { name: 'Appointments', description: 'Booking, rescheduling, status changes and free slots' },
        { name: 'Encounters', description: 'Clinical visits: SOAP notes, signing and addenda' },
        { name: 'Operations', description: 'Health probes' },
        {
          name: 'OpenID Connect',
          description:
            'The embedded token issuer, at the paths of a Keycloak realm (absent with an external issuer)',
        },
      ],
    },
  })
  await app.register(swaggerUi, { routePrefix: '/swagger-ui' })

  app.get('/v3/api-docs', { schema: { hide: true } }, async () => app.swagger())
  app.get('/swagger-ui.html', { schema: { hide: true } }, async (_request, reply) =>
    reply.redirect('/swagger-ui/'),
  )
}

export default fp(openapi, { name: 'openapi' })
