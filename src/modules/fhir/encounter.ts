import type { Coding, Encounter } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { EncounterRow } from '../../../db/tables/encounters.js'
import type { EncounterStatus } from '../../../schemas/encounters.js'
import { requireEncounter } from '../encounters/service.js'
import { VISIT_TYPE_SYSTEM, visitType } from './appointment.js'
import { encounterWrites } from './encounter-writes.js'
import { keptVersions } from './kept-versions.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, recordResource, reference, referencesTo } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import { checkLaunchPatient } from './scopes.js'
import {
  dateParameter,
  inverse,
  nothing,
  referenceParameter,
  tokenParameter,
  tokenValues,
} from './search-conditions.js'
import { US_CORE_ENCOUNTER } from './us-core-profiles.js'

const ENCOUNTER_STATUS_SYSTEM = 'http://hl7.org/fhir/encounter-status'
const ACT_CODE_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-ActCode'

/**
 * Our note lifecycle in FHIR's encounter status codes: a DRAFT note is a visit still being
 * documented (in-progress); a signed note, amended or not, closes the visit (finished).
 */
const STATUSES: Record<EncounterStatus, NonNullable<Encounter['status']>> = {
  DRAFT: 'in-progress',
  SIGNED: 'finished',
  AMENDED: 'finished',
}
const STATUSES_OF_CODE = inverse(STATUSES)

const VIRTUAL: Coding = { system: ACT_CODE_SYSTEM, code: 'VR', display: 'virtual' }
const AMBULATORY: Coding = { system: ACT_CODE_SYSTEM, code: 'AMB', display: 'ambulatory' }

/** The v3 ActCode class of a visit type: telehealth visits are virtual, all others ambulatory (office). */
const classOf = (encounterType: string) => (encounterType === 'TELEHEALTH' ? VIRTUAL : AMBULATORY)

const PRIMARY_PERFORMER: Coding = {
  system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationType',
  code: 'PPRF',
  display: 'primary performer',
}

/**
 * An encounter row as FHIR R4 Encounter. The note's clinical text (SOAP, diagnoses) stays out:
 * Encounter has no place for it (that is Composition's and Condition's); the chief complaint is the
 * reason for the visit. Every visit is at the practice: its one Location and its Organization,
 * both under the organization's id. US Core's identifier and hospitalization are left out: the
 * service holds no business identifier of a visit and no discharge (its visits are ambulatory).
 */
function toFhirEncounter(row: EncounterRow): Encounter & { id: string } {
  const encounter = recordResource<Encounter>('Encounter', row, {
    status: STATUSES[row.status as EncounterStatus] ?? 'in-progress',
    class: classOf(row.encounter_type),
    type: [visitType(row.encounter_type)],
    subject: reference('Patient', row.patient_id),
    participant: [
      {
        type: [{ coding: [PRIMARY_PERFORMER] }],
        individual: reference('Practitioner', row.provider_id),
      },
    ],
    appointment: row.appointment_id ? [reference('Appointment', row.appointment_id)] : undefined,
    // The visit's day only: the service records no times for it.
    period: { start: row.encounter_date },
    reasonCode: row.chief_complaint ? [{ text: row.chief_complaint }] : undefined,
    location: [{ location: reference('Location', row.organization_id) }],
    serviceProvider: reference('Organization', row.organization_id),
  })
  return claiming(US_CORE_ENCOUNTER, encounter)
}

const encountersOf = (db: Db, scope: ReadScope) =>
  db.selectFrom('encounters').selectAll().where('organization_id', '=', scope.actor.organizationId)

/** Encounter: the organization's visit notes, every status (none is ever removed); written as drafts and signed. */
export function encounterResource(): FhirResourceType<Encounter> {
  return defineResourceType({
    type: 'Encounter',
    profile: US_CORE_ENCOUNTER,
    restRead: 'GET /api/encounters/:id',
    restSearch: 'GET /api/encounters',
    records: encountersOf,
    patientColumn: 'patient_id',
    columns: { id: 'id', updatedAt: 'updated_at', sortDates: { date: 'encounter_date' } },
    searchParameters: [
      referenceParameter('patient', 'Patient', 'patient_id'),
      referenceParameter('practitioner', 'Practitioner', 'provider_id'),
      dateParameter('date', 'The day of the visit', 'encounter_date', 'date'),
      tokenParameter('status', 'in-progress (DRAFT) | finished (SIGNED, AMENDED)', 'status', {
        system: ENCOUNTER_STATUS_SYSTEM,
        ours: STATUSES_OF_CODE,
      }),
      {
        name: 'class',
        type: 'token',
        documentation: `${ACT_CODE_SYSTEM}: VR (telehealth) | AMB (every other visit type)`,
        where(query, values) {
          const codes = tokenValues(values, ACT_CODE_SYSTEM)
          const virtual = codes.includes('VR')
          const ambulatory = codes.includes('AMB')
          if (virtual && ambulatory) return query
          return virtual
            ? query.where('encounter_type', '=', 'TELEHEALTH')
            : ambulatory
              ? query.where('encounter_type', '<>', 'TELEHEALTH')
              : query.where(nothing)
        },
      },
      tokenParameter(
        'type',
        `Visit type, system ${VISIT_TYPE_SYSTEM}: OFFICE_VISIT | NEW_PATIENT | FOLLOW_UP | TELEHEALTH | ANNUAL_PHYSICAL | CONSULTATION | PROCEDURE`,
        'encounter_type',
        { system: VISIT_TYPE_SYSTEM },
      ),
    ],
    includes: {
      patient: (encounter) => referencesTo('Patient', [encounter.subject]),
      practitioner: (encounter) =>
        referencesTo(
          'Practitioner',
          encounter.participant?.map((participant) => participant.individual),
        ),
    },
    toFhir: toFhirEncounter,
    versions: keptVersions('encounters', toFhirEncounter, { patientColumn: 'patient_id' }),
    writes: encounterWrites({ toFhir: toFhirEncounter, statusesOf: STATUSES_OF_CODE, virtual: VIRTUAL }),
    async read(db, scope, id) {
      const row = await requireEncounter(db, scope.actor, id)
      checkLaunchPatient(scope, row.patient_id)
      return toFhirEncounter(row)
    },
  })
}
