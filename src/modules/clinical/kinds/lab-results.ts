import type { Static } from '@sinclair/typebox'
import { Type } from '@sinclair/typebox'
import { LabResultData, LabResultInput } from '../../../../schemas/clinical.js'
import { invalidField } from '../../../errors.js'
import type { ClinicalKind } from '../kind.js'
import { orNull, pastInstant } from './checks.js'

/** LOINC's check digit: the mod-10 (Luhn) digit of the part before the dash. */
function validLoinc(code: string): boolean {
  const [body = '', check] = code.split('-')
  let sum = 0
  for (let i = 0; i < body.length; i++) {
    let digit = Number(body[body.length - 1 - i])
    if (i % 2 === 0) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
  }
  return (10 - (sum % 10)) % 10 === Number(check)
}

function interpret(input: Static<typeof LabResultInput>): Static<typeof LabResultData>['interpretation'] {
  if (input.interpretation) return input.interpretation
  const { low, high } = input.referenceRange ?? {}
  if (typeof input.value !== 'number' || (low === undefined && high === undefined)) return null
  if (low !== undefined && input.value < low) return 'LOW'
  if (high !== undefined && input.value > high) return 'HIGH'
  return 'NORMAL'
}

export const labResults: ClinicalKind<typeof LabResultInput, typeof LabResultData> = {
  kind: 'LAB_RESULT',
  path: 'lab-results',
  label: 'lab-result',
  input: LabResultInput,
  data: LabResultData,
  statusField: 'status',
  listFilters: {
    testCode: Type.Optional(Type.String({ pattern: '^[0-9]{1,7}-[0-9]$', description: 'LOINC code' })),
  },
  codeFilter: 'testCode',
  prepare(input, previous) {
    if (!validLoinc(input.testCode)) throw invalidField('testCode', 'has a wrong LOINC check digit')
    const range = input.referenceRange
    if (range?.low !== undefined && range.high !== undefined && range.low > range.high) {
      throw invalidField('referenceRange.low', 'must not be above referenceRange.high')
    }
    const resultedAt = pastInstant(input.resultedAt, 'resultedAt')
    const collectedAt = input.specimenCollectedAt
      ? pastInstant(input.specimenCollectedAt, 'specimenCollectedAt')
      : null
    if (collectedAt && collectedAt > resultedAt)
      throw invalidField('resultedAt', 'must not be before specimenCollectedAt')
    // Correcting a final result makes it CORRECTED, whatever the client sent.
    const status = previous && previous.status !== 'PRELIMINARY' ? 'CORRECTED' : (input.status ?? 'FINAL')
    return {
      data: {
        status,
        testCode: input.testCode,
        testName: input.testName,
        value: input.value,
        unit: orNull(input.unit),
        referenceRange: range
          ? { low: orNull(range.low), high: orNull(range.high), text: orNull(range.text) }
          : null,
        interpretation: interpret(input),
        specimenCollectedAt: collectedAt?.toISOString() ?? null,
        resultedAt: resultedAt.toISOString(),
      },
      status,
      code: input.testCode,
      effectiveAt: resultedAt,
    }
  },
}
