import type { Coding, Encounter } from '@medplum/fhirtypes'
import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { EncounterRow } from '../../../db/tables/encounters.js'
import type { EncounterStatus } from '../../../schemas/encounters.js'
import { missingRecord, ownerOrganization } from '../../access/organization-scope.js'
import { AppError } from '../../errors.js'
import { VISIT_TYPE_SYSTEM, visitType } from './appointment.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import {
  countMatches,
  dateCondition,
  inCompartment,
  keysetPage,
  present,
  referenceParameter,
  type SearchColumns,
  sortParameters,
  tokenValues,
  whereCommon,
  whereOneOf,
  whereReferences,
} from './search-conditions.js'
import { occurrences, type SearchQuery } from './search-params.js'

const COLUMNS: SearchColumns = { id: 'id', updatedAt: 'updated_at', sortDates: { date: 'encounter_date' } }

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
const STATUSES_OF_CODE: Record<string, EncounterStatus[]> = {
  'in-progress': ['DRAFT'],
  finished: ['SIGNED', 'AMENDED'],
}

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
 * reason for the visit.
 */
function toFhirEncounter(row: EncounterRow): Encounter & { id: string } {
  return present({
    resourceType: 'Encounter' as const,
    id: String(row.id),
    meta: { versionId: String(row.version), lastUpdated: row.updated_at.toISOString() },
    status: STATUSES[row.status as EncounterStatus] ?? 'in-progress',
    class: classOf(row.encounter_type),
    type: [visitType(row.encounter_type)],
    subject: { reference: `Patient/${row.patient_id}` },
    participant: [
      {
        type: [{ coding: [PRIMARY_PERFORMER] }],
        individual: { reference: `Practitioner/${row.provider_id}` },
      },
    ],
    appointment: row.appointment_id ? [{ reference: `Appointment/${row.appointment_id}` }] : undefined,
    // The visit's day only: the service records no times for it.
    period: { start: row.encounter_date },
    reasonCode: row.chief_complaint ? [{ text: row.chief_complaint }] : undefined,
  }) as Encounter & { id: string }
}

type EncounterQuery = ReturnType<typeof encountersOf>

const encountersOf = (db: Db, scope: ReadScope) => {
  const query = db
    .selectFrom('encounters')
    .selectAll()
    .where('organization_id', '=', scope.actor.organizationId)
  return inCompartment(query, scope, 'patient_id')
}

const none = sql<boolean>`false`

function filtered(query: EncounterQuery, search: SearchQuery): EncounterQuery {
  let result = whereCommon(query, search, COLUMNS)
  result = whereReferences(result, search, 'patient', 'Patient', 'patient_id')
  result = whereReferences(result, search, 'practitioner', 'Practitioner', 'provider_id')
  for (const values of occurrences(search, 'status')) {
    const ours = tokenValues(values, ENCOUNTER_STATUS_SYSTEM).flatMap((code) => STATUSES_OF_CODE[code] ?? [])
    result = whereOneOf(result, 'status', ours)
  }
  for (const values of occurrences(search, 'class')) {
    const codes = tokenValues(values, ACT_CODE_SYSTEM)
    const virtual = codes.includes('VR')
    const ambulatory = codes.includes('AMB')
    if (virtual && ambulatory) continue
    result = virtual
      ? result.where('encounter_type', '=', 'TELEHEALTH')
      : ambulatory
        ? result.where('encounter_type', '<>', 'TELEHEALTH')
        : result.where(none)
  }
  for (const values of occurrences(search, 'type')) {
    const types = tokenValues(values, VISIT_TYPE_SYSTEM)
    result = whereOneOf(result, 'encounter_type', types)
  }
  for (const values of occurrences(search, 'date')) {
    result = result.where((eb) =>
      eb.or(values.map((value) => dateCondition(eb, 'encounter_date', value, 'date'))),
    )
  }
  return result
}

/** Encounter: the organization's visit notes, every status (none is ever removed). */
export function encounterResource(): FhirResourceType<Encounter> {
  return {
    type: 'Encounter',
    restRead: 'GET /api/encounters/:id',
    restSearch: 'GET /api/encounters',
    sortParameters: sortParameters(COLUMNS),
    searchParameters: [
      referenceParameter('patient', 'Patient'),
      referenceParameter('practitioner', 'Practitioner'),
      { name: 'date', type: 'date', documentation: 'The day of the visit (prefixes eq, ne, gt, lt, ge, le)' },
      {
        name: 'status',
        type: 'token',
        documentation: 'in-progress (DRAFT) | finished (SIGNED, AMENDED)',
      },
      {
        name: 'class',
        type: 'token',
        documentation: `${ACT_CODE_SYSTEM}: VR (telehealth) | AMB (every other visit type)`,
      },
      {
        name: 'type',
        type: 'token',
        documentation: `Visit type, system ${VISIT_TYPE_SYSTEM}: OFFICE_VISIT | NEW_PATIENT | FOLLOW_UP | TELEHEALTH | ANNUAL_PHYSICAL | CONSULTATION | PROCEDURE`,
      },
    ],
    includes: {
      patient: (encounter) => (encounter.subject?.reference ? [encounter.subject.reference] : []),
      practitioner: (encounter) =>
        (encounter.participant ?? [])
          .map((participant) => participant.individual?.reference)
          .filter((reference): reference is string => reference?.startsWith('Practitioner/') === true),
    },
    async read(db, scope, id) {
      const row =
        (await db
          .selectFrom('encounters')
          .selectAll()
          .where('organization_id', '=', scope.actor.organizationId)
          .where('id', '=', id)
          .executeTakeFirst()) ??
        missingRecord('Encounter', id, await ownerOrganization(db, 'encounters', id), scope.actor)
      if (scope.patient !== undefined && row.patient_id !== scope.patient) {
        throw new AppError('AUTH_003', 'The token is limited to another patient’s records')
      }
      return toFhirEncounter(row)
    },
    search: (db, scope, query, page) =>
      keysetPage(filtered(encountersOf(db, scope), query), COLUMNS, page, toFhirEncounter),
    count: (db, scope, query) => countMatches(filtered(encountersOf(db, scope), query)),
  }
}
