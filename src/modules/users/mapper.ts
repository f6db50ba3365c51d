import type { User } from '../../../schemas/users.js'
import { isRole } from '../../access/roles.js'
import type { AccountRow } from './queries.js'

export function toUser(row: AccountRow): User {
  return {
    id: row.id,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    // Typed without a cast: the schema's role names must be the access layer's (src/access/roles.ts).
    roles: row.roles.filter(isRole),
    active: row.active,
    passwordChangeRequired: row.password_change_required,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}
