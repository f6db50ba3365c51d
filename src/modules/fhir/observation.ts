import type { CodeableConcept, Observation, ObservationReferenceRange, Quantity } from '@medplum/fhirtypes'
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely'
import type { Database, Db } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { LabResultData } from '../../../schemas/clinical.js'
import { missingRecord } from '../../access/organization-scope.js'
import type { RouteKey } from '../../access/route-access.js'
import { AppError } from '../../errors.js'
import { defineResourceType } from './resource-definition.js'
import { present, recordResource, reference, referencesTo } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
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
import {
  categoryOf,
  LOINC,
  MEASUREMENT_FIELDS,
  OBSERVATION_CATEGORY,
  toFhirVitalSigns,
  UCUM,
  VITALS_PANEL_CODE,
} from './vital-signs-mapping.js'

const INTERPRETATION = 'http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation'

const LAB_STATUS: Record<string, Observation['status']> = {
  PRELIMINARY: 'preliminary',
  FINAL: 'final',
  CORRECTED: 'corrected',
  ENTERED_IN_ERROR: 'entered-in-error',
}
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

/**
 * Units are free text in the REST API. Only one written in UCUM's syntax (no spaces, UCUM's
 * characters, balanced brackets) is sent with the UCUM system and code; any other is sent as
 * display text alone, since a wrong UCUM code is worse than none to a system that computes with it.
 */
function ucumLike(unit: string): boolean {
  if (!/^[A-Za-z0-9%./*^'[\]{}()_+-]{1,30}$/.test(unit)) return false
  let depth = 0
  for (const char of unit) {
    depth += '[{('.includes(char) ? 1 : ')}]'.includes(char) ? -1 : 0
    if (depth < 0) return false
  }
  return depth === 0
}

const quantityOf = (value: number, unit: string | null): Quantity =>
  unit === null ? { value } : ucumLike(unit) ? { value, unit, system: UCUM, code: unit } : { value, unit }

function interpretationOf(data: LabResultData): CodeableConcept[] | undefined {
  const coded = (code: string, display: string) => [{ coding: [{ system: INTERPRETATION, code, display }] }]
  switch (data.interpretation) {
    case 'NORMAL':
      return coded('N', 'Normal')
    case 'LOW':
      return coded('L', 'Low')
    case 'HIGH':
      return coded('H', 'High')
    case 'CRITICAL': {
      // The direction of a critical result is known only from a numeric value against its range.
      const { low, high } = data.referenceRange ?? {}
      if (typeof data.value === 'number' && high != null && data.value > high)
        return coded('HH', 'Critical high')
      if (typeof data.value === 'number' && low != null && data.value < low)
        return coded('LL', 'Critical low')
      return coded('AA', 'Critical abnormal')
    }
    default:
      return undefined
  }
}

/** A lab result as a laboratory Observation: LOINC code, value, range, interpretation. */
function toFhirLabResult(row: ClinicalRecordRow): Observation & { id: string } {
  const data = row.data as LabResultData
  const range = data.referenceRange
  const referenceRange = range
    ? present<ObservationReferenceRange>({
        low: range.low === null ? undefined : quantityOf(range.low, data.unit),
        high: range.high === null ? undefined : quantityOf(range.high, data.unit),
        text: range.text ?? undefined,
      })
    : undefined
  return recordResource('Observation', row, {
    status: row.entered_in_error_at ? 'entered-in-error' : (LAB_STATUS[data.status] ?? 'unknown'),
    category: categoryOf('laboratory'),
    code: { coding: [{ system: LOINC, code: data.testCode }], text: data.testName },
    subject: reference('Patient', row.patient_id),
    encounter: reference('Encounter', row.encounter_id),
    // The clinically relevant time of a lab result is when the specimen was taken.
    effectiveDateTime: data.specimenCollectedAt ?? data.resultedAt,
    issued: data.resultedAt,
    valueQuantity: typeof data.value === 'number' ? quantityOf(data.value, data.unit) : undefined,
    valueString: typeof data.value === 'string' ? data.value : undefined,
    interpretation: interpretationOf(data),
    referenceRange: referenceRange ? [referenceRange] : undefined,
  })
}

const toFhirObservation = (row: ClinicalRecordRow) =>
  row.kind === 'VITAL_SIGNS' ? toFhirVitalSigns(row) : toFhirLabResult(row)

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
const effective = sql<Date>`coalesce((r.data->>'specimenCollectedAt')::timestamptz, r.effective_at)`

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

const LAB_ROUTES = {
  read: 'GET /api/patients/:patientId/lab-results/:id',
  search: 'GET /api/patients/:patientId/lab-results',
} as const satisfies { read: RouteKey; search: RouteKey }

/** Observation: vital signs (as vital signs panels) and lab results. */
export function observationResource(): FhirResourceType<Observation> {
  return defineResourceType({
    type: 'Observation',
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
