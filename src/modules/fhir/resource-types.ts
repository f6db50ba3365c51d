import { type PatientMapping, patientResource } from './patient.js'
import type { FhirResourceType } from './resource-type.js'

/** Every resource type the FHIR interface serves, in the order the CapabilityStatement lists them. */
export function resourceTypes(mapping: PatientMapping): FhirResourceType[] {
  return [
    patientResource(mapping),
    // Each further type: one line here, its module beside this file.
  ] as unknown as FhirResourceType[]
}
