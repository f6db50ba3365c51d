import { type Db, inTransaction } from '../../../db/database.js'
import {
  type Organization,
  type PatchOrganizationBody,
  UpdateOrganizationBody,
} from '../../../schemas/organizations.js'
import type { Actor } from '../../access/organization-scope.js'
import { invalidField, notFound } from '../../errors.js'
import { patchRecord, projectOnto } from '../../lib/merge-patch.js'
import { atExpectedVersion, type ExpectedVersion } from '../../lib/versions.js'
import { isValidNpi } from '../providers/service.js'
import { organizationColumns, toOrganization } from './mapper.js'
import { findOrganizationRow, lockOrganizationRow, updateOrganizationRow } from './queries.js'

/**
 * The caller's own organization is the only one it reaches: another id names no organization of
 * its (404), as in FHIR, where which organizations exist is not told.
 */
function ownId(actor: Actor, id: number): number {
  if (id !== actor.organizationId) throw notFound(`Organization ${id}`)
  return id
}

export async function getOrganization(db: Db, actor: Actor, id: number): Promise<Organization> {
  const row = await findOrganizationRow(db, ownId(actor, id))
  if (!row) throw notFound(`Organization ${id}`)
  return toOrganization(row)
}

/** Replaces the practice's details; a body that is what it holds changes nothing and keeps the version. */
export async function updateOrganization(
  db: Db,
  actor: Actor,
  id: number,
  body: UpdateOrganizationBody,
  expectedVersion: ExpectedVersion,
): Promise<Organization> {
  if (body.npi && !isValidNpi(body.npi)) throw invalidField('npi', 'fails the NPI check digit')
  return inTransaction(db, async (trx) => {
    const locked = await lockOrganizationRow(trx, ownId(actor, id))
    const current = await atExpectedVersion(locked, expectedVersion, () => {
      throw notFound(`Organization ${id}`)
    })
    const updated = await updateOrganizationRow(trx, id, {
      ...organizationColumns(body),
      updated_by: actor.userId,
    })
    return toOrganization(updated ?? current)
  })
}

/** A JSON Merge Patch of the practice's details: the merged record is checked like a full replacement. */
export async function patchOrganization(
  db: Db,
  actor: Actor,
  id: number,
  patch: PatchOrganizationBody,
  expectedVersion: ExpectedVersion,
  validate: (merged: unknown) => UpdateOrganizationBody,
): Promise<Organization> {
  return patchRecord({
    patch,
    expected: expectedVersion,
    read: () => getOrganization(db, actor, id),
    bodyOf: (organization) => projectOnto(UpdateOrganizationBody, organization),
    validate,
    write: (body, version) => updateOrganization(db, actor, id, body, version),
  })
}
