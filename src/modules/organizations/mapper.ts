import type { OrganizationRow } from '../../../db/tables/organizations.js'
import type { Organization, UpdateOrganizationBody } from '../../../schemas/organizations.js'

export function toOrganization(row: OrganizationRow): Organization {
  return {
    id: row.id,
    name: row.name,
    npi: row.npi,
    phoneNumber: row.phone_number,
    email: row.email,
    address: {
      street: row.address_street,
      city: row.address_city,
      state: row.address_state,
      postalCode: row.address_postal_code,
      country: row.address_country,
    },
    version: row.version,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

/** The columns a replacement writes: an optional field left out is cleared. */
export function organizationColumns(body: UpdateOrganizationBody) {
  const address = body.address
  return {
    name: body.name,
    npi: body.npi ?? null,
    phone_number: body.phoneNumber ?? null,
    email: body.email ?? null,
    address_street: address?.street ?? null,
    address_city: address?.city ?? null,
    address_state: address?.state ?? null,
    address_postal_code: address?.postalCode ?? null,
    address_country: address?.country ?? null,
  }
}
