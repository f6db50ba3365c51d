import type { OperationOutcome } from '@medplum/fhirtypes'
import { type FhirResource, type FhirResponse, RESPONSE_KEY } from 'fhir-kit-client'
import type { App } from '../../src/app.js'
import { buildTestApp } from './app.js'
import { freePort } from './servers/processes.js'

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

/**
 * An app listening on a free loopback port, its PUBLIC_URL that address (FHIR links are absolute:
 * a client follows them to this instance), and its FHIR base URL.
 */
export async function listeningFhirApp(
  config: Record<string, string> = {},
): Promise<{ app: App; baseUrl: string }> {
  const port = await freePort()
  const app = await buildTestApp({ PUBLIC_URL: `http://127.0.0.1:${port}`, ...config })
  await app.listen({ host: '127.0.0.1', port })
  return { app, baseUrl: `http://127.0.0.1:${port}/fhir/R4` }
}
