import { describe, expect, it } from 'vitest'
import { AppError } from '../../../src/errors.js'
import { checkPasswordPolicy } from '../../../src/identity/password-policy.js'

const account = { email: 'Ann.Lee@example.test' }

function violation(password: string, context: Parameters<typeof checkPasswordPolicy>[1] = account) {
  try {
    checkPasswordPolicy(password, context, 'newPassword')
  } catch (error) {
    expect(error).toBeInstanceOf(AppError)
    const { code, status, details } = error as AppError
    return { code, status, details }
  }
  return undefined
}

describe('the password policy', () => {
  it('accepts 12 to 1024 characters, counted as code points', () => {
    expect(violation('x'.repeat(12))).toBeUndefined()
    expect(violation('x'.repeat(1024))).toBeUndefined()
    expect(violation('🔑'.repeat(12))).toBeUndefined()
  })

  it('refuses fewer than 12 or more than 1024 characters with 422 VAL_001 naming the field', () => {
    expect(violation('x'.repeat(11))).toEqual({
      code: 'VAL_001',
      status: 422,
      details: 'newPassword must have at least 12 characters',
    })
    expect(violation('x'.repeat(1025))?.details).toBe('newPassword must have at most 1024 characters')
  })

  it('refuses the account e-mail address in any case', () => {
    expect(violation('ann.lee@EXAMPLE.test')?.details).toBe(
      'newPassword must not be the account e-mail address',
    )
  })

  it('refuses the current password, also in another Unicode spelling, only when one is given', () => {
    const current = 'ｃｕｒｒｅｎｔ passphrase'
    expect(violation('current passphrase')).toBeUndefined()
    expect(violation('current passphrase', { ...account, currentPassword: current })?.details).toBe(
      'newPassword must differ from the current password',
    )
    expect(violation('another passphrase', { ...account, currentPassword: current })).toBeUndefined()
  })
})
