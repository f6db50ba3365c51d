import type { Observation } from '@medplum/fhirtypes'
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely'
import type { Database, Db } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { missingRecord } from '../../access/organization-scope.js'
import type { RouteKey } from '../../access/route-access.js'
import { invalidField } from '../../errors.js'
import { clinicalRecordOwner } from './clinical-record.js'
import { keptVersions } from './kept-versions.js'
import { labResultWrites, toFhirLabResult } from './lab-result-mapping.js'
import { defineResourceType } from './resource-definition.js'
import { referencesTo } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import type { ResourceWrites } from './resource-writes.js'
import { checkLaunchPatient } from './scopes.js'
import {
  dateParameter,
  nothing,
  ownEntry,
  referenceParameter,
  tokenParameter,
  tokenValues,
} from './search-conditions.js'
import { US_CORE_OBSERVATION_LAB } from './us-core-profiles.js'
import {
  LOINC,
  MEMBER_CODES,
  OBSERVATION_CATEGORY,
  toFhirVitalSign,
  toFhirVitalSigns,
  VITAL_SIGNS_PROFILES,
  VITALS_PANEL_CODE,
  vitalSignsWrites,
  vitalSignsWritesOf,
} from './vital-signs-mapping.js'

/** Observation.status search values as the stored statuses of both kinds. */
const STORED_STATUS: Record<string, string> = {
  preliminary: 'PRELIMINARY',
  final: 'FINAL',
  amended: 'AMENDED',
  corrected: 'CORRECTED',
  'entered-in-error': 'ENTERED_IN_ERROR',
}

const KINDS: ClinicalKindName[] = ['VITAL_SIGNS', 'VITAL_SIGN', 'LAB_RESULT']
const KIND_OF_CATEGORY: Record<string, ClinicalKindName> = {
  'vital-signs': 'VITAL_SIGNS',
  laboratory: 'LAB_RESULT',
}
/** The records of each category: vital signs are the panels and their measurements. */
const KINDS_OF_CATEGORY: Record<string, ClinicalKindName[]> = {
  'vital-signs': ['VITAL_SIGNS', 'VITAL_SIGN'],
  laboratory: ['LAB_RESULT'],
}

const TO_FHIR: Record<string, (row: ClinicalRecordRow) => Observation & { id: string }> = {
  VITAL_SIGNS: toFhirVitalSigns,
  VITAL_SIGN: toFhirVitalSign,
  LAB_RESULT: toFhirLabResult,
}
const toFhirObservation = (row: ClinicalRecordRow) => (TO_FHIR[row.kind] ?? toFhirLabResult)(row)

/** Whether a vital-signs Observation is a vital signs panel (85353-1), not one measurement of one. */
const isPanel = (observation: Observation) =>
  observation.code?.coding?.some((coding) => coding.system === LOINC && coding.code === VITALS_PANEL_CODE) ===
  true

/**
 * A measurement is written through its panel, which holds it (contained when written, referenced by
 * hasMember when read): its own Observation is not written.
 */
function refuseMeasurement(observation: Observation): void {
  if (isPanel(observation)) return
  throw invalidField(
    'Observation.code',
    `a vital sign is written as part of a vital signs panel (${VITALS_PANEL_CODE} of ${LOINC}) that holds it: write the panel${
      observation.id ? ` whose hasMember references Observation/${observation.id}` : ''
    }`,
  )
}

/** The kind of record an Observation is, as its category says: vital-signs or laboratory (422 otherwise). */
function kindOf(observation: Observation): ClinicalKindName {
  const kinds = new Set(
    (observation.category ?? [])
      .flatMap((category) => category.coding ?? [])
      .filter((coding) => coding.system === OBSERVATION_CATEGORY)
      .flatMap((coding) => ownEntry(KIND_OF_CATEGORY, coding.code ?? '') ?? []),
  )
  const [kind, ...others] = kinds
  if (kind === undefined || others.length > 0) {
    throw invalidField(
      'Observation.category',
      `must be one of vital-signs (a vital signs panel) or laboratory (a lab result), of ${OBSERVATION_CATEGORY}`,
    )
  }
  return kind
}

/**
 * A vital signs panel or a lab result, as its category says, each written through its kind's REST
 * routes. The type's own are the vital signs' (PROVIDER and NURSE write them); a lab result's
 * narrow them to PROVIDER.
 */
const observationWrites: ResourceWrites<Observation> = {
  ...vitalSignsWrites,
  kindOf(observation, current) {
    const kind = kindOf(observation)
    if (current && kindOf(current) !== kind) {
      const was = kind === 'LAB_RESULT' ? 'a vital signs panel' : 'a lab result'
      throw invalidField('Observation.category', `cannot change: Observation/${current.id} is ${was}`)
    }
    if (kind === 'LAB_RESULT') return labResultWrites
    if (current) refuseMeasurement(current)
    refuseMeasurement(observation)
    return vitalSignsWritesOf(observation)
  },
}

/** Clinical records of the kinds (by default: vital signs and lab results) of the organization's live patients, as `r`. */
export const observationsOf = (db: Db, scope: ReadScope, kinds: readonly ClinicalKindName[] = KINDS) =>
  db
    .selectFrom('clinical_records as r')
    .innerJoin('patients as p', (join) =>
      join.onRef('p.id', '=', 'r.patient_id').onRef('p.organization_id', '=', 'r.organization_id'),
    )
    .selectAll('r')
    .where('r.organization_id', '=', scope.actor.organizationId)
    .where('p.deleted_at', 'is', null)
    .where('r.kind', 'in', kinds)
type Eb = ExpressionBuilder<Database & { r: Database['clinical_records'] }, 'r'>

/** Observation.effective: the specimen's collection for lab results, else the clinical time. */
export const effective = sql<Date>`coalesce((r.data->>'specimenCollectedAt')::timestamptz, r.effective_at)`

/**
 * `code`: a code of the Observation's own: a lab result's or a measurement's LOINC code (stored in
 * `code`; pulse oximetry's 2708-6 finds the record stored under 59408-5), 85353-1 for the panels.
 */
function codeCondition(eb: Eb, codes: string[]): Expression<SqlBool> {
  const stored = [...new Set([...codes, ...codes.flatMap((code) => ownEntry(MEMBER_CODES, code) ?? [])])]
  const conditions = [
    ...(stored.length > 0 ? [eb('r.code', 'in', stored)] : []),
    ...(codes.includes(VITALS_PANEL_CODE) ? [eb('r.kind', '=', 'VITAL_SIGNS')] : []),
  ]
  return conditions.length > 0 ? eb.or(conditions) : nothing
}

export const LAB_ROUTES = {
  read: 'GET /api/patients/:patientId/lab-results/:id',
  search: 'GET /api/patients/:patientId/lab-results',
} as const satisfies { read: RouteKey; search: RouteKey }

/**
 * Observation: vital signs (a vital signs panel per record, and an Observation per measurement it
 * holds) and lab results.
 */
export function observationResource(): FhirResourceType<Observation> {
  return defineResourceType({
    type: 'Observation',
    profile: [US_CORE_OBSERVATION_LAB, ...VITAL_SIGNS_PROFILES],
    // Lab results share the vital signs routes' roles (PROVIDER, NURSE read both) and are audited
    // under their own routes' rules.
    restRead: 'GET /api/patients/:patientId/vitals/:id',
    restSearch: 'GET /api/patients/:patientId/vitals',
    restRoutesOf: (observation) =>
      observation.category?.some((category) =>
        category.coding?.some((coding) => coding.code === 'laboratory'),
      )
        ? LAB_ROUTES
        : undefined,
    records: (db, scope) => observationsOf(db, scope),
    patientColumn: 'r.patient_id',
    columns: { id: 'r.id', updatedAt: 'r.updated_at', sortDates: { date: effective } },
    searchParameters: [
      referenceParameter('patient', 'Patient', 'r.patient_id'),
      referenceParameter('subject', 'Patient', 'r.patient_id'),
      tokenParameter(
        'category',
        `vital-signs (the panels and their measurements) | laboratory (system ${OBSERVATION_CATEGORY})`,
        'r.kind',
        { system: OBSERVATION_CATEGORY, ours: KINDS_OF_CATEGORY },
      ),
      {
        name: 'code',
        type: 'token',
        documentation: `LOINC (${LOINC}): a lab test, a vital sign (8867-4, 85354-9, …), or ${VITALS_PANEL_CODE} for vital signs panels`,
        where: (query, values) => query.where((eb) => codeCondition(eb, tokenValues(values, LOINC))),
      },
      dateParameter(
        'date',
        'Observation.effective: measured, or the specimen collected (else resulted)',
        effective,
        'instant',
      ),
      tokenParameter('status', 'preliminary | final | amended | corrected | entered-in-error', 'r.status', {
        ours: STORED_STATUS,
      }),
    ],
    includes: { patient: (observation) => referencesTo('Patient', [observation.subject]) },
    toFhir: toFhirObservation,
    versions: keptVersions('clinical_records', toFhirObservation, {
      patientColumn: 'patient_id',
      shown: { kind: KINDS },
    }),
    writes: observationWrites,
    async read(db, scope, id) {
      const row = await observationsOf(db, scope).where('r.id', '=', id).executeTakeFirst()
      if (!row) missingRecord('Observation', id, await clinicalRecordOwner(db, KINDS, id), scope.actor)
      checkLaunchPatient(scope, row.patient_id)
      return toFhirObservation(row)
    },
  })
}
