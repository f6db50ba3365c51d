import type { Static } from '@sinclair/typebox'
import { VitalSignsData, VitalSignsInput } from '../../../../schemas/clinical.js'
import { invalidField, invalidFields } from '../../../errors.js'
import { projectOnto } from '../../../lib/merge-patch.js'
import type { ClinicalKind } from '../kind.js'
import { orNull, pastInstant } from './checks.js'

const CELSIUS = { min: 25, max: 45 }
const MEASUREMENTS = [
  'systolic',
  'diastolic',
  'heartRate',
  'respiratoryRate',
  'temperature',
  'spo2',
  'heightCm',
  'weightKg',
  'painScore',
] as const

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits

export const vitalSigns: ClinicalKind<typeof VitalSignsInput, typeof VitalSignsData> = {
  kind: 'VITAL_SIGNS',
  path: 'vitals',
  label: 'vital-signs',
  input: VitalSignsInput,
  data: VitalSignsData,
  statusField: 'status',
  listFilters: {},
  inputOf(row) {
    const data = row.data as Static<typeof VitalSignsData>
    const measured = projectOnto(VitalSignsInput, { ...data, encounterId: row.encounter_id }) as Static<
      typeof VitalSignsInput
    >
    return {
      ...measured,
      recordedAt: row.effective_at.toISOString(),
      ...(data.temperatureCelsius === null
        ? {}
        : { temperature: { value: data.temperatureCelsius, unit: 'C' } }),
    }
  },
  prepare(input, previous) {
    if (!MEASUREMENTS.some((name) => input[name] !== undefined)) {
      throw invalidFields(
        [{ path: '', message: `must hold at least one measurement (${MEASUREMENTS.join(', ')})` }],
        `vitals need at least one measurement (${MEASUREMENTS.join(', ')})`,
      )
    }
    if (input.systolic !== undefined && input.diastolic !== undefined && input.diastolic >= input.systolic) {
      throw invalidField('diastolic', 'must be below systolic')
    }
    let temperatureCelsius: number | null = null
    if (input.temperature) {
      const { value, unit } = input.temperature
      temperatureCelsius = round(unit === 'F' ? ((value - 32) * 5) / 9 : value, 2)
      if (temperatureCelsius < CELSIUS.min || temperatureCelsius > CELSIUS.max) {
        throw invalidField(
          'temperature.value',
          `must be between ${CELSIUS.min} and ${CELSIUS.max} °C (77–113 °F)`,
        )
      }
    }
    const { heightCm, weightKg } = input
    return {
      data: {
        status: previous ? 'AMENDED' : 'FINAL',
        systolic: orNull(input.systolic),
        diastolic: orNull(input.diastolic),
        heartRate: orNull(input.heartRate),
        respiratoryRate: orNull(input.respiratoryRate),
        temperatureCelsius,
        spo2: orNull(input.spo2),
        heightCm: orNull(heightCm),
        weightKg: orNull(weightKg),
        bmi: heightCm && weightKg ? round(weightKg / (heightCm / 100) ** 2, 1) : null,
        painScore: orNull(input.painScore),
      },
      status: previous ? 'AMENDED' : 'FINAL',
      code: null,
      effectiveAt: pastInstant(input.recordedAt, 'recordedAt'),
    }
  },
}
