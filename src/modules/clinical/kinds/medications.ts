import { Type } from '@sinclair/typebox'
import { MedicationData, MedicationInput } from '../../../../schemas/clinical.js'
import { invalidFields } from '../../../errors.js'
import { checkProviderOfOrganization } from '../../providers/service.js'
import type { ClinicalKind } from '../kind.js'
import { notBefore, orNull } from './checks.js'

export const medications: ClinicalKind<typeof MedicationInput, typeof MedicationData> = {
  kind: 'MEDICATION',
  path: 'medications',
  label: 'medication',
  input: MedicationInput,
  data: MedicationData,
  statusField: 'status',
  listFilters: { rxnormCode: Type.Optional(Type.String({ pattern: '^[0-9]{1,10}$' })) },
  codeFilter: 'rxnormCode',
  async checkReferences(db, organizationId, input) {
    if (input.prescriberId)
      await checkProviderOfOrganization(db, organizationId, input.prescriberId, 'prescriberId')
  },
  prepare(input) {
    notBefore(orNull(input.endDate), orNull(input.startDate), 'endDate', 'startDate')
    if (
      (input.dose === undefined || input.dose === null) !==
      (input.doseUnit === undefined || input.doseUnit === null)
    ) {
      const missing = input.doseUnit === undefined || input.doseUnit === null ? 'doseUnit' : 'dose'
      throw invalidFields(
        [{ path: missing, message: `is required with ${missing === 'dose' ? 'doseUnit' : 'dose'}` }],
        'doseUnit and dose go together',
      )
    }
    const status = input.status ?? 'ACTIVE'
    return {
      data: {
        status,
        name: input.name,
        rxnormCode: orNull(input.rxnormCode),
        dose: orNull(input.dose),
        doseUnit: orNull(input.doseUnit),
        route: orNull(input.route),
        frequency: orNull(input.frequency),
        startDate: orNull(input.startDate),
        endDate: orNull(input.endDate),
        prescriberId: orNull(input.prescriberId),
        instructions: orNull(input.instructions),
      },
      status,
      code: orNull(input.rxnormCode),
      effectiveAt: input.startDate ? new Date(`${input.startDate}T00:00:00Z`) : null,
    }
  },
}
