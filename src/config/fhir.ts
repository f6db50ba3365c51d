import { type Static, Type } from '@sinclair/typebox'

export const FhirEnv = Type.Object(
  {
    FHIR_MRN_SYSTEM: Type.String({
      pattern: '^(https?://[^\\s]+|urn:[^\\s]+)$',
      default: 'urn:ehr-service:mrn',
      description:
        'The identifier system of medical record numbers in FHIR resources (`Patient.identifier.system`); set your organization’s own, e.g. `https://hospital.example/fhir/mrn`',
    }),
    FHIR_BUNDLE_MAX_ENTRIES: Type.Integer({
      minimum: 1,
      maximum: 10_000,
      default: 500,
      description: 'Most entries a batch or transaction Bundle may hold; more is 413',
    }),
    FHIR_BUNDLE_MAX_BYTES: Type.Integer({
      minimum: 1024,
      maximum: 100 * 1024 * 1024,
      default: 10 * 1024 * 1024,
      description: 'Largest batch or transaction Bundle accepted, in bytes; larger is 413',
    }),
  },
  { title: 'FHIR' },
)

export interface FhirSettings {
  mrnSystem: string
  /** The FHIR interface's base URL: `$PUBLIC_URL/fhir/R4`. */
  base: string
  bundleLimits: { entries: number; bytes: number }
}

export function fhirSettings(env: Static<typeof FhirEnv>, publicUrl: string): FhirSettings {
  return {
    mrnSystem: env.FHIR_MRN_SYSTEM,
    base: `${publicUrl}/fhir/R4`,
    bundleLimits: { entries: env.FHIR_BUNDLE_MAX_ENTRIES, bytes: env.FHIR_BUNDLE_MAX_BYTES },
  }
}
