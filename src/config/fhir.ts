import { type Static, Type } from '@sinclair/typebox'

export const FhirEnv = Type.Object(
  {
    FHIR_MRN_SYSTEM: Type.String({
      pattern: '^(https?://[^\\s]+|urn:[^\\s]+)$',
      default: 'urn:ehr-service:mrn',
      description:
        'The identifier system of medical record numbers in FHIR resources (`Patient.identifier.system`); set your organization’s own, e.g. `https://hospital.example/fhir/mrn`',
    }),
  },
  { title: 'FHIR' },
)

export interface FhirSettings {
  mrnSystem: string
  /** The FHIR interface's base URL: `$PUBLIC_URL/fhir/R4`. */
  base: string
}

export function fhirSettings(env: Static<typeof FhirEnv>, publicUrl: string): FhirSettings {
  return { mrnSystem: env.FHIR_MRN_SYSTEM, base: `${publicUrl}/fhir/R4` }
}
