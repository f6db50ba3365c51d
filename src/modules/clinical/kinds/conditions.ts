import { Type } from '@sinclair/typebox'
import { ConditionData, ConditionInput } from '../../../../schemas/clinical.js'
import type { ClinicalKind } from '../kind.js'
import { notBefore, orNull, pastDate } from './checks.js'

export const conditions: ClinicalKind<typeof ConditionInput, typeof ConditionData> = {
  kind: 'CONDITION',
  path: 'conditions',
  label: 'condition',
  input: ConditionInput,
  data: ConditionData,
  statusField: 'clinicalStatus',
  listFilters: {
    icd10Code: Type.Optional(Type.String({ pattern: '^[A-TV-Z][0-9][0-9AB](\\.[0-9A-TV-Z]{1,4})?$' })),
  },
  codeFilter: 'icd10Code',
  prepare(input) {
    const onsetDate = pastDate(input.onsetDate, 'onsetDate')
    const abatementDate = pastDate(input.abatementDate, 'abatementDate')
    notBefore(abatementDate, onsetDate, 'abatementDate', 'onsetDate')
    const clinicalStatus = input.clinicalStatus ?? 'ACTIVE'
    return {
      data: {
        icd10Code: input.icd10Code,
        description: input.description,
        clinicalStatus,
        verificationStatus: input.verificationStatus ?? 'CONFIRMED',
        onsetDate,
        abatementDate,
        severity: orNull(input.severity),
        note: orNull(input.note),
      },
      status: clinicalStatus,
      code: input.icd10Code,
      effectiveAt: onsetDate ? new Date(`${onsetDate}T00:00:00Z`) : null,
    }
  },
}
