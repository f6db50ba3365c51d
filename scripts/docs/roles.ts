import { authorityOf, ROLES, type Role } from '../../src/access/roles.js'
import { ROLE_NEEDS, ROUTE_ACCESS, type RouteAccess } from '../../src/access/route-access.js'
import { code, generatedNotice, table } from './markdown.js'

function whoMayCall(access: RouteAccess): string {
  if (access.allow === 'public') return 'anyone (public)'
  if (access.allow === 'authenticated') return 'any valid token'
  return access.allow.join(', ')
}

/** docs/reference/roles.md: the roles and what each needs, then every `/api` route with who may call it and why. */
export function rolesReference(
  routeAccess: Record<string, RouteAccess> = ROUTE_ACCESS,
  roles: readonly Role[] = ROLES,
  needs: Record<Role, string> = ROLE_NEEDS,
): string {
  const rows = Object.entries(routeAccess).map(([route, access]) => [
    code(route),
    whoMayCall(access),
    access.why ?? '—',
    access.audit ? `${access.audit.resourceType} ${access.audit.action}` : '—',
  ])
  const granted = new Set(
    Object.values(routeAccess).flatMap((access) => (Array.isArray(access.allow) ? access.allow : [])),
  )
  const withoutRoutes = roles.filter((role) => !granted.has(role))
  const perRole = roles.map((role) => {
    const count = Object.values(routeAccess).filter(
      (access) => Array.isArray(access.allow) && access.allow.includes(role),
    ).length
    return [code(role), code(authorityOf(role)), String(count), needs[role]]
  })
  return `${generatedNotice('`ROUTE_ACCESS` and `ROLE_NEEDS` in src/access/route-access.ts and `ROLES` in src/access/roles.ts')}

# Roles and route access

Roles come from the access token's \`realm_access.roles\` and are checked as \`ROLE_<name>\`. A route
admits a caller holding at least one of its roles; anything else is 403 AUTH_003 (401 without a
valid token). On top of roles, a caller only ever reaches records of their own organization.

Each role gets what its work in a practice's day needs and nothing more (the minimum necessary):
a route is opened to a role because that work needs it, never because it would do no harm.

${table(['Role', 'Checked as', 'Routes it opens', 'What it needs'], perRole)}
${
  withoutRoutes.length > 0
    ? `\n${withoutRoutes.map(code).join(', ')} open${withoutRoutes.length === 1 ? 's' : ''} no route of ${withoutRoutes.length === 1 ? 'its' : 'their'} own: such a caller reaches only the routes open to any valid token.\n`
    : ''
}
## Routes

Every \`/api\` route, in the order of \`ROUTE_ACCESS\`. "Why" is the reason those roles and no others
may call it, also given in the operation's OpenAPI description. "Audit record" is the resource type
and action of the audit record a call leaves; routes marked — leave none.

${table(['Route', 'Who may call it', 'Why', 'Audit record'], rows)}
`
}
