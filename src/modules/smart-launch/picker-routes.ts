import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Patient } from '../../../schemas/patients.js'
import { htmlPage, PatientPickerForm } from '../../../schemas/smart-launch.js'
import { lookUpPatients, type PatientLookup } from '../patients/service.js'
import type { AuthorizationFlow } from './authorization-flow.js'
import { authorizationParametersOf, UnredirectableError } from './authorization-request.js'
import type { BrowserSession } from './browser-sessions.js'
import { type Decision, type PatientToPick, UnchoosablePatient } from './decision.js'
import { auditLaunchStep } from './launch-audit.js'
import { AUTHORIZE, formOf, type PageKit, pageSchema, patientIdOf, text } from './page-kit.js'
import type { PatientChoice, PickerTerms } from './pages.js'

/** The most patients a search lists: enough for a name shared by a family, few enough to read. */
const PICKER_LIMIT = 20

const choiceOf = (patient: Patient): PatientChoice => {
  const { firstName, middleName, lastName, dateOfBirth } = patient.identification
  return {
    id: patient.id,
    name: [firstName, middleName, lastName].filter(Boolean).join(' '),
    birthDate: dateOfBirth,
    mrn: patient.mrn,
  }
}

const isDate = (value: string) =>
  /^[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}$/.test(value) &&
  new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) === value

/** The search a picker form asks for, or why it cannot be made. */
function searchOf(
  form: Record<string, unknown>,
): { terms: PickerTerms } & ({ lookup: PatientLookup } | { error: string }) {
  const terms = {
    name: text(form.name).trim(),
    birthDate: text(form.birthDate).trim(),
    mrn: text(form.mrn).trim(),
  }
  if (!terms.name && !terms.birthDate && !terms.mrn) {
    return { terms, error: 'Fill in a name, a birth date or an MRN.' }
  }
  if (terms.name.length > 100 || terms.mrn.length > 32) {
    return { terms, error: 'The name may have 100 characters at most, the MRN 32.' }
  }
  if (terms.birthDate && !isDate(terms.birthDate)) {
    return { terms, error: 'The birth date is not a date: year, month and day, as 1980-04-02.' }
  }
  const lookup = {
    ...(terms.name ? { words: terms.name } : {}),
    ...(terms.birthDate ? { dateOfBirth: terms.birthDate } : {}),
    ...(terms.mrn ? { mrn: terms.mrn } : {}),
  }
  return { terms, lookup }
}

/**
 * The patient picker's form: a search of the user's organization's patients, or the choice of one
 * it listed. Every search and every choice is an audit record (`SEARCH`, `SELECT` on `patient`)
 * with the ids of the patients listed or chosen, never the terms searched for.
 */
export function pickerRoutes(app: FastifyInstance, kit: PageKit, flow: AuthorizationFlow) {
  const audit = (
    request: FastifyRequest,
    session: BrowserSession,
    step: { action: 'SEARCH' | 'SELECT'; status: number; ids: number[]; patientId?: number },
  ) =>
    auditLaunchStep(app.db, {
      organizationId: session.organizationId,
      userId: session.userId,
      resourceType: 'patient',
      requestId: request.id,
      ...step,
    })

  async function search(request: FastifyRequest, reply: FastifyReply, toPick: PatientToPick) {
    const asked = searchOf(formOf(request))
    if ('error' in asked) {
      await audit(request, toPick.session, { action: 'SEARCH', status: 422, ids: [] })
      return flow.showPicker(request, reply, toPick, asked, 422)
    }
    const { patients, total } = await lookUpPatients(
      app.db,
      toPick.session.organizationId,
      asked.lookup,
      PICKER_LIMIT,
    )
    const ids = patients.map((patient) => patient.id)
    await audit(request, toPick.session, { action: 'SEARCH', status: 200, ids })
    return flow.showPicker(request, reply, toPick, {
      terms: asked.terms,
      found: { patients: patients.map(choiceOf), total, limit: PICKER_LIMIT },
    })
  }

  async function choose(request: FastifyRequest, reply: FastifyReply, toPick: PatientToPick) {
    const id = patientIdOf(formOf(request).patient)
    const ids = id === undefined ? [] : [id]
    let decision: Decision
    try {
      if (id === undefined) throw new UnchoosablePatient(undefined)
      decision = await flow.decide(toPick.request, toPick.session, id)
    } catch (error) {
      if (!(error instanceof UnchoosablePatient)) throw error
      await audit(request, toPick.session, { action: 'SELECT', status: 403, ids })
      const refusal = { error: 'That patient cannot be chosen. Search again.' }
      return flow.showPicker(request, reply, toPick, refusal, 403)
    }
    return flow.proceed(request, reply, decision, (status) =>
      audit(request, toPick.session, { action: 'SELECT', status, ids, patientId: id }),
    )
  }

  app.post(
    `${AUTHORIZE}/patient`,
    {
      schema: pageSchema(
        'authorizePatient',
        'Patient picker form',
        PatientPickerForm,
        {
          200: htmlPage(
            'The picker with the patients found (at most 20), or the consent page after a choice',
          ),
          400: htmlPage(
            'The request cannot be answered at a redirect URI of the app, or has no patient to choose',
          ),
          403: htmlPage(
            'The form is not valid any more (its CSRF token), or the picker again: the patient sent is not one the user may choose',
          ),
          422: htmlPage('The picker again: no search term, or a birth date that is not a date'),
        },
        'For a member of the practice in a standalone launch with `launch/patient`: with `patient`, chooses that patient (a live patient of the user’s organization) as the launch context, then carries on to consent or the code; otherwise searches the organization’s patients by name, birth date and MRN (every one given must match). Each search and choice is audited (`SEARCH`, `SELECT` on `patient`, with the ids of the patients listed or chosen, not the terms).',
      ),
    },
    async (request, reply) => {
      const form = formOf(request)
      const session = await kit.cookies.sessionOf(app.db, request)
      if (!session || !kit.cookies.validFormToken(request, session, form.csrf)) return kit.refusedForm(reply)
      try {
        const authorization = await flow.check(authorizationParametersOf(form))
        const toPick = await flow.decide(authorization, session)
        if (!('pick' in toPick)) throw new UnredirectableError('This request has no patient to choose')
        return form.patient === undefined
          ? await search(request, reply, toPick)
          : await choose(request, reply, toPick)
      } catch (error) {
        return kit.refuse(reply, error)
      }
    },
  )
}
