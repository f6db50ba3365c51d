import type { OperationOutcomeIssue, Resource } from '@medplum/fhirtypes'
import { VALIDATED_TYPES } from './validated-types.js'

type Validator = typeof import('./base-validator.js')

// Loaded on the first write: the validator and the definitions it indexes are no part of a start.
let validator: Promise<Validator> | undefined

async function errorsOf(resource: Resource): Promise<OperationOutcomeIssue[]> {
  if (!(VALIDATED_TYPES as readonly string[]).includes(resource.resourceType)) return []
  validator ??= import('./base-validator.js')
  return (await validator).baseErrors(resource)
}

// Checks started ahead of their writes (validateAhead), each taken once by baseValidationErrors.
const startedAhead = new WeakMap<Resource, Promise<OperationOutcomeIssue[]>>()

/**
 * Starts checking a resource to be written next as soon as the event loop has nothing else to do
 * (while the write before it waits for the database), so that baseValidationErrors of that
 * resource answers from this check. The resource must not change before its write.
 */
export function validateAhead(resource: Resource): void {
  if (startedAhead.has(resource)) return
  const errors = new Promise<void>((resolve) => setImmediate(resolve)).then(() => errorsOf(resource))
  // A failure reaches the write that awaits it; a write that never comes (its Bundle failed before)
  // leaves it unawaited.
  errors.catch(() => {})
  startedAhead.set(resource, errors)
}

/** The resource's errors against the R4 base definitions of its type; none for a type not validated. */
export function baseValidationErrors(resource: Resource): Promise<OperationOutcomeIssue[]> {
  const ahead = startedAhead.get(resource)
  if (!ahead) return errorsOf(resource)
  startedAhead.delete(resource)
  return ahead
}
