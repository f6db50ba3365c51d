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

// A FHIRPath expression of an element (`Patient.name[0].given`), as a field of a write's 422 is.
const ELEMENT_PATH = /^[A-Z][A-Za-z]*(\.[a-z][A-Za-z0-9]*(\[[0-9]+\])?)*$/

/**
 * How every failure under /fhir is answered: one issue, or one per field at fault, each naming its
 * element in `expression` where the field is a FHIRPath expression.
 */
export function operationOutcome(
  status: number,
  diagnostics: string,
  fields: readonly { path: string; message: string }[] = [],
): OperationOutcome {
  const code = ISSUE_CODES[status] ?? 'exception'
  if (fields.length === 0) {
    return { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code, diagnostics }] }
  }
  return {
    resourceType: 'OperationOutcome',
    issue: fields.map(({ path, message }) => ({
      severity: 'error' as const,
      code,
      diagnostics: `${path} ${message}`,
      ...(ELEMENT_PATH.test(path) ? { expression: [path] } : {}),
    })),
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
