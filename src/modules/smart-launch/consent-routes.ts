import type { FastifyInstance } from 'fastify'
import { ConsentForm, htmlPage } from '../../../schemas/smart-launch.js'
import { recordGrant } from '../smart-apps/service.js'
import type { AuthorizationFlow } from './authorization-flow.js'
import { authorizationParametersOf, RedirectedError } from './authorization-request.js'
import { UnchoosablePatient } from './decision.js'
import { auditLaunchStep } from './launch-audit.js'
import { AUTHORIZE, formOf, type PageKit, pageSchema, patientIdOf } from './page-kit.js'
import { errorPage } from './pages.js'

/** The consent page's form: the grant (remembered for the next authorizations) and the code, or a denial. */
export function consentRoutes(app: FastifyInstance, kit: PageKit, flow: AuthorizationFlow) {
  app.post(
    `${AUTHORIZE}/consent`,
    {
      schema: pageSchema('authorizeConsent', 'Consent page form', ConsentForm, {
        403: htmlPage(
          'The form is not valid any more: its CSRF token, or the patient it carries (no longer one the user may choose)',
        ),
      }),
    },
    async (request, reply) => {
      const form = formOf(request)
      const session = await kit.cookies.sessionOf(app.db, request)
      if (!session || !kit.validForm(request, session, form)) return kit.refusedForm(reply)
      // Bound to the CSRF token, the patient is the one the picker was sent; decide checks it again.
      const chosen = patientIdOf(form.patient)
      if (form.patient !== undefined && chosen === undefined) return kit.refusedForm(reply)
      const parameters = authorizationParametersOf(form)
      try {
        const authorization = await flow.check(parameters)
        const decision = await flow.decide(authorization, session, chosen)
        // A patient to choose, and none chosen: not a form a page of the picker's way showed.
        if ('pick' in decision || (chosen !== undefined && !decision.picked)) return kit.refusedForm(reply)
        const step = {
          organizationId: session.organizationId,
          userId: session.userId,
          resourceType: 'smart-app' as const,
          ids: [authorization.app.id],
          patientId: decision.patientId ?? null,
          requestId: request.id,
        }
        if (form.decision !== 'approve') {
          await auditLaunchStep(app.db, { ...step, action: 'DENY', status: 303 })
          throw new RedirectedError(authorization, 'access_denied', 'The user denied the app access')
        }
        const grantId = await app.db.transaction().execute((trx) =>
          recordGrant(trx, {
            organizationId: session.organizationId,
            userId: session.userId,
            appId: authorization.app.id,
            scopes: decision.scopes,
          }),
        )
        await auditLaunchStep(app.db, { ...step, action: 'CONSENT', status: 303 })
        return await flow.answerWithCode(reply, decision, grantId)
      } catch (error) {
        if (error instanceof UnchoosablePatient) {
          return kit.show(
            reply,
            403,
            errorPage(
              'Cannot continue',
              'This patient cannot be chosen. Go back to the app and start again.',
            ),
          )
        }
        return kit.refuse(reply, error)
      }
    },
  )
}
