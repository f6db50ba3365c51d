import { forbidden, notFound } from '../errors.js'

/** Who is acting: every operation on an organization's records is confined to that organization. */
export interface Actor {
  userId: number
  organizationId: number
}

/**
 * The specification's organization rule, for every kind of record: a record of another
 * organization is 403, a missing one 404. `ownerOrganizationId` comes from the table's one
 * cross-tenant probe, which returns nothing but the owner's id.
 */
export function missingRecord(
  resource: string,
  id: number,
  ownerOrganizationId: number | undefined,
  actor: Actor,
): never {
  if (ownerOrganizationId !== undefined && ownerOrganizationId !== actor.organizationId) {
    throw forbidden(`The ${resource.toLowerCase()} belongs to another organization`)
  }
  throw notFound(`${resource} ${id}`)
}
