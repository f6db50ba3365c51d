import type { OperationOutcomeIssue, Resource } from '@medplum/fhirtypes'
import { VALIDATED_TYPES } from './validated-types.js'

type Validator = typeof import('./base-validator.js')

// Loaded on the first write: the validator and the definitions it indexes are no part of a start.
let validator: Promise<Validator> | undefined

/** The resource's errors against the R4 base definitions of its type; none for a type not validated. */
export async function baseValidationErrors(resource: Resource): Promise<OperationOutcomeIssue[]> {
  if (!(VALIDATED_TYPES as readonly string[]).includes(resource.resourceType)) return []
  validator ??= import('./base-validator.js')
  return (await validator).baseErrors(resource)
}
