import type { DiagnosticReport } from '@medplum/fhirtypes'
import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import { missingRecord } from '../../access/organization-scope.js'
import { clinicalRecordOwner } from './clinical-record.js'
import { keptVersions } from './kept-versions.js'
import { LAB_STATUS_OF_CODE, labStatusOf, toFhirLabResult } from './lab-result-mapping.js'
import { effective, LAB_ROUTES, observationsOf } from './observation.js'
import { defineResourceType } from './resource-definition.js'
import { claiming, recordResource, reference, referencesTo } from './resource-elements.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import { checkLaunchPatient } from './scopes.js'
import { dateParameter, referenceParameter, tokenParameter } from './search-conditions.js'
import { US_CORE_DIAGNOSTIC_REPORT_LAB } from './us-core-profiles.js'
import { LOINC } from './vital-signs-mapping.js'
import { referencedId } from './written-references.js'

const DIAGNOSTIC_SERVICE_SECTIONS = 'http://terminology.hl7.org/CodeSystem/v2-0074'
const LABORATORY = 'LAB'

/**
 * A lab result as the report of its one result: the records hold no order or panel that would
 * group results into one report, so each result is reported alone, under its own id. The report's
 * code is the test's, its time the specimen's collection (else the result's), issued when resulted.
 * The practice is the performer: the organization that holds and releases the result (the
 * performing laboratory is not recorded, nor is a provider for every recording user).
 */
function toFhirDiagnosticReport(row: ClinicalRecordRow): DiagnosticReport & { id: string } {
  const result = toFhirLabResult(row)
  const report = recordResource<DiagnosticReport>('DiagnosticReport', row, {
    status: labStatusOf(row),
    category: [
      { coding: [{ system: DIAGNOSTIC_SERVICE_SECTIONS, code: LABORATORY, display: 'Laboratory' }] },
    ],
    code: result.code,
    subject: result.subject,
    encounter: result.encounter,
    effectiveDateTime: result.effectiveDateTime,
    issued: result.issued,
    performer: [reference('Organization', row.organization_id)],
    result: [{ reference: `Observation/${result.id}` }],
  })
  return claiming(US_CORE_DIAGNOSTIC_REPORT_LAB, report)
}

/** The organization's lab results, of its live patients. */
const labResultsOf = (db: Db, scope: ReadScope) => observationsOf(db, scope, ['LAB_RESULT'])

/** DiagnosticReport: each lab result as the laboratory report of it (read-only; written as lab results). */
export function diagnosticReportResource(): FhirResourceType<DiagnosticReport> {
  return defineResourceType({
    type: 'DiagnosticReport',
    profile: US_CORE_DIAGNOSTIC_REPORT_LAB,
    restRead: LAB_ROUTES.read,
    restSearch: LAB_ROUTES.search,
    records: labResultsOf,
    patientColumn: 'r.patient_id',
    columns: { id: 'r.id', updatedAt: 'r.updated_at', sortDates: { date: effective } },
    searchParameters: [
      referenceParameter('patient', 'Patient', 'r.patient_id'),
      referenceParameter('subject', 'Patient', 'r.patient_id'),
      // Every report is a laboratory one: LAB matches them all, any other category none.
      tokenParameter('category', `LAB (system ${DIAGNOSTIC_SERVICE_SECTIONS})`, sql`${LABORATORY}`, {
        system: DIAGNOSTIC_SERVICE_SECTIONS,
      }),
      tokenParameter('code', `The test's LOINC code (${LOINC})`, 'r.code', { system: LOINC }),
      dateParameter(
        'date',
        'DiagnosticReport.effective: the specimen collected, else resulted',
        effective,
        'instant',
      ),
      tokenParameter('status', 'preliminary | final | corrected | entered-in-error', 'r.status', {
        ours: LAB_STATUS_OF_CODE,
      }),
    ],
    includes: {
      patient: (report) => referencesTo('Patient', [report.subject]),
      result: (report) => referencesTo('Observation', report.result),
    },
    toFhir: toFhirDiagnosticReport,
    patientOf: (report) => referencedId(report.subject, 'Patient'),
    versions: keptVersions('clinical_records', toFhirDiagnosticReport, {
      patientColumn: 'patient_id',
      shown: { kind: ['LAB_RESULT'] },
    }),
    async read(db, scope, id) {
      const row = await labResultsOf(db, scope).where('r.id', '=', id).executeTakeFirst()
      if (!row)
        missingRecord('DiagnosticReport', id, await clinicalRecordOwner(db, ['LAB_RESULT'], id), scope.actor)
      checkLaunchPatient(scope, row.patient_id)
      return toFhirDiagnosticReport(row)
    },
  })
}
