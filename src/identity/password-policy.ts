import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../schemas/auth.js'
import { invalidField } from '../errors.js'

export interface PasswordAccount {
  email: string
  /** The password being replaced, already verified: given only when a user changes their own. */
  currentPassword?: string
}

// Passwords are hashed in NFKC form, so two spellings with the same NFKC form are the same password.
const samePassword = (a: string, b: string) => a.normalize('NFKC') === b.normalize('NFKC')

function brokenRule(password: string, account: PasswordAccount): string | undefined {
  // Code points, as JSON Schema's minLength and maxLength count them.
  const length = [...password].length
  if (length < PASSWORD_MIN_LENGTH) return `must have at least ${PASSWORD_MIN_LENGTH} characters`
  if (length > PASSWORD_MAX_LENGTH) return `must have at most ${PASSWORD_MAX_LENGTH} characters`
  if (password.toLowerCase() === account.email.toLowerCase()) return 'must not be the account e-mail address'
  if (account.currentPassword !== undefined && samePassword(password, account.currentPassword)) {
    return 'must differ from the current password'
  }
  return undefined
}

/**
 * The password policy, applied wherever a password is set: accounts created by an operator or at
 * bootstrap, resets and changes. Throws 422 VAL_001 naming the field and the rule broken.
 */
export function checkPasswordPolicy(password: string, account: PasswordAccount, field: string): void {
  const broken = brokenRule(password, account)
  if (broken) throw invalidField(field, broken)
}
