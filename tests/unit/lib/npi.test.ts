import { describe, expect, it } from 'vitest'
import { isValidNpi } from '../../../src/modules/providers/npi.js'

describe('isValidNpi', () => {
  it('accepts NPIs whose check digit is right (Luhn over 80840 and the first nine digits)', () => {
    for (const npi of ['1234567893', '1245319599', '1003000126']) expect(isValidNpi(npi), npi).toBe(true)
  })

  it('rejects a wrong check digit, swapped digits and other lengths', () => {
    for (const npi of ['1234567890', '1234567839', '123456789', '12345678933', '123456789a']) {
      expect(isValidNpi(npi), npi).toBe(false)
    }
  })
})
