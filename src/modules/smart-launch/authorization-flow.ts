import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { FhirScopeRules } from '../../access/grantable-scopes.js'
import { findPatientOfOrganization } from '../patients/service.js'
import { redeemLaunch } from '../smart-apps/service.js'
import { issueCode } from './authorization-codes.js'
import {
  type AuthorizationParameters,
  type AuthorizationRequest,
  checkAuthorizationRequest,
  RedirectedError,
} from './authorization-request.js'
import type { BrowserSession } from './browser-sessions.js'
import { type Decision, decide, type PatientToPick } from './decision.js'
import { scopeInWords } from './granted-scopes.js'
import { standingGrant } from './launch-grants.js'
import type { PageKit } from './page-kit.js'
import { consentPage, type PickerView, pickerPage, signInPage } from './pages.js'

export interface FlowOptions {
  /** The FHIR base URL, which an authorization request's `aud` must name. */
  fhirBase: string
  fhirScopes: FhirScopeRules
}

/**
 * The authorization request's way through the pages: sign-in when nobody is signed in, the patient
 * picker when a member of the practice has to choose the launch patient, then consent unless the
 * user's standing grant covers what the app asks, then the code.
 */
export function authorizationFlow(app: FastifyInstance, kit: PageKit, { fhirBase, fhirScopes }: FlowOptions) {
  /**
   * Issues the code of an allowed decision, using up an EHR launch with it (one transaction), and
   * sends the user back to the app with it.
   */
  async function answerWithCode(reply: FastifyReply, decision: Decision, appGrantId: number) {
    const { request, session } = decision
    const code = await app.db.transaction().execute(async (trx) => {
      if (request.launch !== undefined) {
        const launched = await redeemLaunch(trx, request.launch, {
          organizationId: session.organizationId,
          appId: request.app.id,
        })
        if (!launched) {
          throw new RedirectedError(request, 'invalid_request', 'The launch is unknown, used or expired')
        }
      }
      return issueCode(trx, {
        organizationId: session.organizationId,
        appId: request.app.id,
        userId: session.userId,
        appGrantId,
        browserSessionId: session.id,
        redirectUri: request.redirectUri,
        scopes: decision.scopes,
        codeChallenge: request.codeChallenge,
        nonce: request.nonce,
        patientId: decision.patientId,
        encounterId: decision.encounterId,
        needPatientBanner: decision.needPatientBanner,
      })
    })
    return kit.redirect(reply, kit.redirectTo(request, { code }))
  }

  const patientName = async (organizationId: number, patientId: number | undefined) => {
    if (patientId === undefined) return undefined
    const row = await findPatientOfOrganization(app.db, organizationId, patientId)
    return row && `${row.first_name} ${row.last_name}, born ${row.date_of_birth}`
  }

  /**
   * The step after a decision: the code when the user's standing grant covers it, else the consent
   * page (carrying the patient chosen on the picker). `recordStep` is called first with the status
   * the step answers, for its audit record.
   */
  async function proceed(
    request: FastifyRequest,
    reply: FastifyReply,
    decision: Decision,
    recordStep?: (status: number) => Promise<void>,
  ) {
    const { request: authorization, session } = decision
    const standing = await standingGrant(app.db, session.userId, authorization.app.id)
    if (standing && decision.scopes.every((scope) => standing.scopes.includes(scope))) {
      await recordStep?.(303)
      return answerWithCode(reply, decision, standing.id)
    }
    await recordStep?.(200)
    const chosen = decision.picked ? decision.patientId : undefined
    const context = kit.formContext(request, reply, authorization.parameters, session, chosen)
    return kit.show(
      reply,
      200,
      consentPage(context, {
        appName: authorization.app.name,
        access: decision.scopes.map(scopeInWords),
        patient: await patientName(session.organizationId, decision.patientId),
      }),
    )
  }

  /** The patient picker, as `view` has it. */
  const showPicker = (
    request: FastifyRequest,
    reply: FastifyReply,
    { request: authorization, session }: PatientToPick,
    view: Omit<PickerView, 'appName'> = {},
    status = 200,
  ) =>
    kit.show(
      reply,
      status,
      pickerPage(kit.formContext(request, reply, authorization.parameters, session), {
        appName: authorization.app.name,
        ...view,
      }),
    )

  /** Carries an authorization request as far as it can go without the user. */
  async function continueAuthorization(
    request: FastifyRequest,
    reply: FastifyReply,
    parameters: AuthorizationParameters,
    signedIn?: BrowserSession,
  ) {
    try {
      const authorization = await checkAuthorizationRequest(app.db, parameters, fhirBase)
      const session = signedIn ?? (await kit.cookies.sessionOf(app.db, request))
      if (!session) {
        const context = kit.formContext(request, reply, parameters, undefined)
        return kit.show(reply, 200, signInPage(context, { appName: authorization.app.name }))
      }
      const decision = await decideOn(authorization, session)
      if ('pick' in decision) return showPicker(request, reply, decision)
      return await proceed(request, reply, decision)
    } catch (error) {
      return kit.refuse(reply, error)
    }
  }

  /** What the signed-in user may grant (decision.ts), with the patient `chosen` on the picker. */
  function decideOn(
    authorization: AuthorizationRequest,
    session: BrowserSession,
    chosen: number,
  ): Promise<Decision>
  function decideOn(
    authorization: AuthorizationRequest,
    session: BrowserSession,
    chosen?: number,
  ): Promise<Decision | PatientToPick>
  function decideOn(authorization: AuthorizationRequest, session: BrowserSession, chosen?: number) {
    return decide(app.db, fhirScopes, authorization, session, chosen)
  }

  return {
    continueAuthorization,
    proceed,
    answerWithCode,
    showPicker,
    /** The request's parameters, checked again (they travel in the pages' forms). */
    check: (parameters: AuthorizationParameters) => checkAuthorizationRequest(app.db, parameters, fhirBase),
    decide: decideOn,
  }
}

export type AuthorizationFlow = ReturnType<typeof authorizationFlow>
