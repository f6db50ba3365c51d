import type { OperationOutcome } from '@medplum/fhirtypes'

type IssueCode = NonNullable<OperationOutcome['issue']>[number]['code']

// The FHIR issue type of each status the FHIR interface answers with.
const ISSUE_CODES: Record<number, IssueCode> = {
  400: 'invalid',
  401: 'login',
  403: 'forbidden',
  404: 'not-found',
  405: 'not-supported',
  406: 'not-supported',
  410: 'deleted',
  412: 'conflict',
  413: 'too-long',
  415: 'not-supported',
  422: 'processing',
  429: 'throttled',
  503: 'transient',
}

/** An OperationOutcome of one issue: how every failure under /fhir is answered. */
export function operationOutcome(status: number, diagnostics: string): OperationOutcome {
  return {
    resourceType: 'OperationOutcome',
    issue: [{ severity: 'error', code: ISSUE_CODES[status] ?? 'exception', diagnostics }],
  }
}

/** The warning a lenient search adds to its Bundle about parameters (or values) it did not use. */
export const ignoredParameters = (names: string[]): OperationOutcome => ({
  resourceType: 'OperationOutcome',
  issue: [
    {
      severity: 'warning',
      code: 'not-supported',
      diagnostics: `Ignored search parameters, unknown or not supported: ${names.join(', ')}`,
    },
  ],
})
