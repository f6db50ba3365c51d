import { Type } from '@sinclair/typebox'
import { ALLERGY_CATEGORIES, AllergyData, AllergyInput } from '../../../../schemas/clinical.js'
import { StringEnum } from '../../../../schemas/common.js'
import type { ClinicalKind } from '../kind.js'
import { orNull, pastDate } from './checks.js'

/** Identifies the substance: its code when given, else its name without case or spacing differences. */
const substanceKey = (input: {
  substance: string
  substanceCode?: { system: string; code: string } | null
}) =>
  input.substanceCode
    ? `${input.substanceCode.system}:${input.substanceCode.code}`
    : `name:${input.substance.trim().toLowerCase().replace(/\s+/g, ' ')}`

export const allergies: ClinicalKind<typeof AllergyInput, typeof AllergyData> = {
  kind: 'ALLERGY',
  path: 'allergies',
  label: 'allergy',
  input: AllergyInput,
  data: AllergyData,
  statusField: 'status',
  listFilters: { category: Type.Optional(StringEnum(ALLERGY_CATEGORIES)) },
  uniqueness: {
    constraint: 'clinical_records_active_allergy_key',
    message: 'The patient already has an ACTIVE allergy to this substance',
  },
  prepare(input) {
    const onsetDate = pastDate(input.onsetDate, 'onsetDate')
    const status = input.status ?? 'ACTIVE'
    return {
      data: {
        status,
        substance: input.substance,
        substanceCode: orNull(input.substanceCode),
        category: input.category,
        reactions: (input.reactions ?? []).map((reaction) => ({
          manifestation: reaction.manifestation,
          severity: orNull(reaction.severity),
        })),
        severity: orNull(input.severity),
        criticality: orNull(input.criticality),
        onsetDate,
      },
      status,
      code: substanceKey(input),
      effectiveAt: onsetDate ? new Date(`${onsetDate}T00:00:00Z`) : null,
    }
  },
}
