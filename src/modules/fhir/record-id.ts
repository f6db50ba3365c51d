import { AppError } from '../../errors.js'

/** The record a FHIR id names: a numeric id, as the service's are; anything else names no record here (404). */
export function recordId(text: string, type: string): number {
  const id = Number(text)
  if (!/^[1-9][0-9]{0,9}$/.test(text) || id > 2_147_483_647) {
    throw new AppError('RES_001', `${type}/${text} not found`)
  }
  return id
}
