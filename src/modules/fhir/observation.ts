import type { Observation } from '@medplum/fhirtypes'
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely'
import type { Database, Db } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { missingRecord } from '../../access/organization-scope.js'
import type { RouteKey } from '../../access/route-access.js'
import { AppError, invalidField } from '../../errors.js'
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
import type { SearchQuery } from './search-params.js'
import { US_CORE_OBSERVATION_LAB } from './us-core-profiles.js'
import {
  LOINC,
  MEASUREMENT_FIELDS,
  OBSERVATION_CATEGORY,
  toFhirVitalSigns,
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

const KINDS: ClinicalKindName[] = ['VITAL_SIGNS', 'LAB_RESULT']
const KIND_OF_CATEGORY: Record<string, ClinicalKindName> = {
  'vital-signs': 'VITAL_SIGNS',
  laboratory: 'LAB_RESULT',
}

const toFhirObservation = (row: ClinicalRecordRow) =>
  row.kind === 'VITAL_SIGNS' ? toFhirVitalSigns(row) : toFhirLabResult(row)

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
    return kind === 'LAB_RESULT' ? labResultWrites : vitalSignsWritesOf(observation)
  },
}

/** Vital signs and lab results of the organization's live patients. */
const observationsOf = (db: Db, scope: ReadScope) =>
  db
    .selectFrom('clinical_records as r')
    .innerJoin('patients as p', (join) =>
      join.onRef('p.id', '=', 'r.patient_id').onRef('p.organization_id', '=', 'r.organization_id'),
    )
    .selectAll('r')
    .where('r.organization_id', '=', scope.actor.organizationId)
    .where('p.deleted_at', 'is', null)
    .where('r.kind', 'in', KINDS)
type Eb = ExpressionBuilder<Database & { r: Database['clinical_records'] }, 'r'>

/** Observation.effective: the specimen's collection for lab results, else the clinical time. */
export const effective = sql<Date>`coalesce((r.data->>'specimenCollectedAt')::timestamptz, r.effective_at)`

/**
 * `code`: the Observation's own code (a lab result's LOINC code, 85353-1 for a vital-signs panel).
 * With `_contained=true` (or `both`), also the code of a panel's contained measurement, answering
 * with the panel (FHIR's `_containedType=container`, the only type served).
 */
function codeCondition(eb: Eb, codes: string[], contained: string): Expression<SqlBool> {
  if (codes.length === 0) return nothing
  const own = [
    eb.and([eb('r.kind', '=', 'LAB_RESULT'), eb('r.code', 'in', codes)]),
    ...(codes.includes(VITALS_PANEL_CODE) ? [eb('r.kind', '=', 'VITAL_SIGNS')] : []),
  ]
  const fields = [...new Set(codes.flatMap((code) => ownEntry(MEASUREMENT_FIELDS, code) ?? []))]
  const members = fields.map((field) =>
    eb.and([eb('r.kind', '=', 'VITAL_SIGNS'), sql<boolean>`(r.data->>${field}) is not null`]),
  )
  const conditions = contained === 'true' ? members : contained === 'both' ? [...own, ...members] : own
  return conditions.length > 0 ? eb.or(conditions) : nothing
}

/** `_contained`: whether `code` matches the panels' own codes (false), their measurements' (true) or both. */
function containedOf(search: SearchQuery): string {
  const contained = search._contained?.[0] ?? 'false'
  if (!['true', 'false', 'both'].includes(contained)) {
    throw new AppError('VAL_001', '_contained must be true, false or both', { status: 400 })
  }
  return contained
}

export const LAB_ROUTES = {
  read: 'GET /api/patients/:patientId/lab-results/:id',
  search: 'GET /api/patients/:patientId/lab-results',
} as const satisfies { read: RouteKey; search: RouteKey }

/** Observation: vital signs (as vital signs panels) and lab results. */
export function observationResource(): FhirResourceType<Observation> {
  return defineResourceType({
    type: 'Observation',
    // Lab results claim US Core's; vital signs panels claim R4's own vitalspanel, no US Core one.
    profile: US_CORE_OBSERVATION_LAB,
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
    records: observationsOf,
    patientColumn: 'r.patient_id',
    columns: { id: 'r.id', updatedAt: 'r.updated_at', sortDates: { date: effective } },
    searchParameters: [
      referenceParameter('patient', 'Patient', 'r.patient_id'),
      referenceParameter('subject', 'Patient', 'r.patient_id'),
      tokenParameter('category', `vital-signs | laboratory (system ${OBSERVATION_CATEGORY})`, 'r.kind', {
        system: OBSERVATION_CATEGORY,
        ours: KIND_OF_CATEGORY,
      }),
      {
        name: 'code',
        type: 'token',
        documentation: `LOINC (${LOINC}): a lab test, or ${VITALS_PANEL_CODE} for vital signs panels; with _contained=true or both, also a measurement in a panel (8867-4, 85354-9, …)`,
        where: (query, values, search) =>
          query.where((eb) => codeCondition(eb, tokenValues(values, LOINC), containedOf(search))),
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
      {
        name: '_contained',
        type: 'token',
        documentation: 'false (default) | true | both: whether code also matches contained measurements',
        // Read by `code`.
        where: (query) => query,
      },
    ],
    checkSearch: containedOf,
    includes: { patient: (observation) => referencesTo('Patient', [observation.subject]) },
    toFhir: toFhirObservation,
    versions: keptVersions('clinical_records', toFhirObservation, {
      patientColumn: 'patient_id',
      shown: { kind: KINDS },
    }),
    writes: observationWrites,
    async read(db, scope, id) {
      const row = await observationsOf(db, scope).where('r.id', '=', id).executeTakeFirst()
      if (!row) missingRecord('Observation', id, await ownerOf(db, id), scope.actor)
      checkLaunchPatient(scope, row.patient_id)
      return toFhirObservation(row)
    },
  })
}

/**
 * The organization of a vital-signs or lab record, whatever the caller's: only to tell another
 * organization's (403) from none (404). Other kinds of clinical record are no Observation (404).
 */
async function ownerOf(db: Db, id: number): Promise<number | undefined> {
  const row = await db
    .selectFrom('clinical_records')
    .select('organization_id')
    .where('id', '=', id)
    .where('kind', 'in', KINDS)
    .executeTakeFirst()
  return row?.organization_id
}
