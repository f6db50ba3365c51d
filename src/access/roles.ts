/** Every role the service knows, as carried in `realm_access.roles` of an access token. */
export const ROLES = ['ADMIN', 'PROVIDER', 'NURSE', 'FRONT_DESK', 'BILLING', 'PATIENT', 'USER'] as const
export type Role = (typeof ROLES)[number]

/** Roles are checked as Spring-style authorities, `ROLE_<name>`, as the API specification describes. */
export const authorityOf = (role: string) => `ROLE_${role}`

export function hasAnyRole(authorities: ReadonlySet<string>, roles: readonly Role[]): boolean {
  return roles.some((role) => authorities.has(authorityOf(role)))
}

export const isRole = (value: string): value is Role => (ROLES as readonly string[]).includes(value)
