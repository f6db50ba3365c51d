import type { OperationOutcome } from '@medplum/fhirtypes'
import { type FhirResource, type FhirResponse, RESPONSE_KEY } from 'fhir-kit-client'

/** The status and OperationOutcome of a request fhir-kit-client refused; a failure when it succeeded. */
export async function refusal(
  request: Promise<unknown>,
): Promise<{ status: number; outcome: OperationOutcome }> {
  try {
    await request
  } catch (error) {
    const { response } = error as { response?: { status: number; data: OperationOutcome } }
    if (!response) throw error
    return { status: response.status, outcome: response.data }
  }
  throw new Error('the request succeeded')
}

/** A resource as fhir-kit-client takes a body. */
export const asSent = (resource: object) => resource as FhirResource

/** The response headers of a result fhir-kit-client answered. */
export const headersOf = (result: unknown) => (result as FhirResponse)[RESPONSE_KEY]?.headers as Headers
