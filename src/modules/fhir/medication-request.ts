import type { MedicationRequest } from '@medplum/fhirtypes'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { MedicationData } from '../../../schemas/clinical.js'
import { invalidField } from '../../errors.js'
import { medications } from '../clinical/service.js'
import { clinicalResourceType } from './clinical-record.js'
import { type ClinicalStatement, clinicalWrites } from './clinical-writes.js'
import {
  dosageOf,
  MEDICATION_STATUS_CODES,
  MEDICATION_STATUS_OF_CODE,
  medicationConcept,
  medicationElements,
  medicationInputOf,
  medicationStatusOf,
  takenPeriod,
  unseenRoute,
} from './medication-mapping.js'
import { claiming, recordResource, reference, referencesTo, withoutUndefined } from './resource-elements.js'
import type { FhirResourceType } from './resource-type.js'
import {
  dateParameter,
  nothing,
  referenceParameter,
  tokenParameter,
  tokenValues,
} from './search-conditions.js'
import { US_CORE_MEDICATION_REQUEST } from './us-core-profiles.js'
import { idIn } from './written-references.js'

const STATUS_SYSTEM = 'http://hl7.org/fhir/CodeSystem/medicationrequest-status'
const INTENT_SYSTEM = 'http://hl7.org/fhir/CodeSystem/medicationrequest-intent'
// A medication-list entry says what the patient takes (US Core's medication list guidance): a
// plan, never an order this server placed or could act on.
const PLAN = 'plan'

/**
 * A medication record as US Core MedicationRequest, the entry of the patient's medication list
 * that US Core asks for (it profiles no MedicationStatement). The prescriber, when the record
 * names one of the practice's, is the requester; a record naming none is a reported entry (told
 * by the patient, or prescribed elsewhere), with no requester: who prescribed it is not known.
 * When it is authored is when it was recorded; the dates it is taken between bound its dosage's
 * timing. No category: the record does not say where the medication is taken.
 */
function toFhirMedicationRequest(row: ClinicalRecordRow): MedicationRequest & { id: string } {
  const data = row.data as MedicationData
  const dosage = dosageOf(data, takenPeriod(data))
  const request = recordResource<MedicationRequest>('MedicationRequest', row, {
    status: medicationStatusOf(row),
    intent: PLAN,
    reportedBoolean: data.prescriberId === null,
    medicationCodeableConcept: medicationConcept(data),
    subject: reference('Patient', row.patient_id),
    encounter: reference('Encounter', row.encounter_id),
    authoredOn: row.recorded_at.toISOString(),
    requester: reference('Practitioner', data.prescriberId),
    dosageInstruction: dosage ? [dosage] : undefined,
  })
  return claiming(US_CORE_MEDICATION_REQUEST, request)
}

/** What a MedicationRequest says of its record: the elements toFhirMedicationRequest writes. */
function medicationRequestStatement(request: MedicationRequest): ClinicalStatement {
  if (request.intent !== PLAN) {
    throw invalidField(
      'MedicationRequest.intent',
      `must be plan: this server keeps medication-list entries (what the patient takes), not ${String(request.intent)} requests`,
    )
  }
  if (
    request.reportedBoolean !== undefined &&
    request.reportedBoolean !== (request.requester === undefined)
  ) {
    throw invalidField(
      'MedicationRequest.reportedBoolean',
      'is true exactly when there is no requester (an entry with no prescriber of this practice)',
    )
  }
  if (request.medicationReference !== undefined) {
    throw invalidField(
      'MedicationRequest.medicationReference',
      'is not stored: give the medication as medicationCodeableConcept (its name as text, its RxNorm code)',
    )
  }
  const dosage = request.dosageInstruction?.[0]
  return {
    patient: request.subject,
    encounter: request.encounter,
    recordedAt: request.authoredOn,
    enteredInError: request.status === 'entered-in-error',
    input: withoutUndefined({
      ...medicationInputOf({
        medication: request.medicationCodeableConcept,
        dosage,
        period: dosage?.timing?.repeat?.boundsPeriod,
        status: request.status,
      }),
      prescriberId: idIn(request.requester, 'Practitioner', 'input.prescriberId'),
    }),
  }
}

const medicationRequestWrites = clinicalWrites({
  type: 'MedicationRequest',
  kind: medications,
  toFhir: toFhirMedicationRequest,
  statementOf: medicationRequestStatement,
  elements: {
    patientId: 'subject',
    recordedAt: 'authoredOn',
    enteredInError: 'status',
    'input.encounterId': 'encounter',
    'input.prescriberId': 'requester',
    ...medicationElements('dosageInstruction', 'dosageInstruction.timing.repeat.boundsPeriod'),
  },
  unseen: unseenRoute,
})

/**
 * MedicationRequest: the patients' medication lists as US Core serves them, the same records as
 * MedicationStatement. The medication is a code (medicationCodeableConcept), never a Medication
 * resource, so there is nothing for `_include=MedicationRequest:medication` to add.
 */
export function medicationRequestResource(): FhirResourceType<MedicationRequest> {
  return clinicalResourceType<MedicationRequest>({
    type: 'MedicationRequest',
    profile: US_CORE_MEDICATION_REQUEST,
    kind: 'MEDICATION',
    path: 'medications',
    searchParameters: [
      {
        name: 'intent',
        type: 'token',
        documentation: `plan (${INTENT_SYSTEM}): every entry is a plan`,
        where: (query, values) =>
          tokenValues(values, INTENT_SYSTEM).includes(PLAN) ? query : query.where(nothing),
      },
      tokenParameter('status', `${MEDICATION_STATUS_CODES} (${STATUS_SYSTEM})`, 'status', {
        system: STATUS_SYSTEM,
        ours: MEDICATION_STATUS_OF_CODE,
      }),
      referenceParameter('encounter', 'Encounter', 'encounter_id'),
      dateParameter('authoredon', 'When the entry was recorded', 'recorded_at', 'instant'),
    ],
    toFhir: toFhirMedicationRequest,
    patientOf: (resource) => resource.subject,
    includes: { requester: (resource) => referencesTo('Practitioner', [resource.requester]) },
    writes: medicationRequestWrites,
  })
}
