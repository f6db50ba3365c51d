import { readFileSync } from 'node:fs'
import { indexStructureDefinitionBundle, validateResource } from '@medplum/core'
import type { Bundle, OperationOutcomeIssue, Resource } from '@medplum/fhirtypes'

// Read beside this module (the bundle copies it next to the chunk that holds it): once, when the
// first write is validated.
indexStructureDefinitionBundle(
  JSON.parse(readFileSync(new URL('./r4-definitions.json', import.meta.url), 'utf8')) as Bundle,
)

/**
 * The errors of a resource against the FHIR R4 base definitions of its type (cardinality, data
 * types, required bindings, invariants), found by Medplum's validator.
 */
export function baseErrors(resource: Resource): OperationOutcomeIssue[] {
  try {
    return validateResource(resource).filter(isError)
  } catch (error) {
    const issues = (error as { outcome?: { issue?: OperationOutcomeIssue[] } }).outcome?.issue
    if (!issues) throw error
    return issues.filter(isError)
  }
}

const isError = (issue: OperationOutcomeIssue) => issue.severity === 'error' || issue.severity === 'fatal'
