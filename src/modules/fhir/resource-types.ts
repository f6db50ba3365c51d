import { allergyIntoleranceResource } from './allergy-intolerance.js'
import { appointmentResource } from './appointment.js'
import { conditionResource } from './condition.js'
import { diagnosticReportResource } from './diagnostic-report.js'
import { type DocumentReferenceMapping, documentReferenceResource } from './document-reference.js'
import { encounterResource } from './encounter.js'
import { locationResource } from './location.js'
import { medicationRequestResource } from './medication-request.js'
import { medicationStatementResource } from './medication-statement.js'
import { observationResource } from './observation.js'
import { organizationResource } from './organization.js'
import { type PatientMapping, patientResource } from './patient.js'
import { practitionerResource } from './practitioner.js'
import { practitionerRoleResource } from './practitioner-role.js'
import type { FhirResourceType } from './resource-type.js'

/** Every resource type the FHIR interface serves, in the order the CapabilityStatement lists them. */
export function resourceTypes(mapping: PatientMapping & DocumentReferenceMapping): FhirResourceType[] {
  return [
    patientResource(mapping),
    documentReferenceResource(mapping),
    practitionerResource(),
    practitionerRoleResource(),
    organizationResource(),
    locationResource(),
    appointmentResource(),
    encounterResource(),
    conditionResource(),
    allergyIntoleranceResource(),
    medicationStatementResource(),
    medicationRequestResource(),
    observationResource(),
    diagnosticReportResource(),
    // Each further type: one line here, its module beside this file.
  ] as unknown as FhirResourceType[]
}
