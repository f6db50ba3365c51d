import { describe, expect, it } from 'vitest'
import { hashPassword, verifyPassword } from '../../../src/identity/password-hashing.js'

describe('password hashing', () => {
  it('verifies the right password only, with a fresh salt per hash', async () => {
    const first = await hashPassword('correct horse battery staple')
    const second = await hashPassword('correct horse battery staple')
    expect(first).toMatch(/^scrypt\$16384\$8\$5\$/)
    expect(first).not.toBe(second)
    expect(first).not.toContain('correct')
    expect(await verifyPassword('correct horse battery staple', first)).toBe(true)
    expect(await verifyPassword('correct horse battery stapler', first)).toBe(false)
  })

  it('rejects malformed stored hashes', async () => {
    expect(await verifyPassword('x', 'plain-text')).toBe(false)
    expect(await verifyPassword('x', 'bcrypt$whatever')).toBe(false)
  })
})
