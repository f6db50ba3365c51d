import type { Provenance, Reference, Resource } from '@medplum/fhirtypes'
import { sql } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { VersionedTable } from '../../lib/record-history.js'
import { claiming, reference } from './resource-elements.js'
import { US_CORE_PROVENANCE } from './us-core-profiles.js'

// Provenance of every record served: who made its current version, for which organization, when.
// It is derived from the record itself (its version, its time, the user who wrote the version), so
// it has no id of its own: `Condition-12` is the provenance of Condition/12, of its current version.

/** Where a type's records name the user who wrote their current version; none: the organization is the author. */
const AUTHORS: Readonly<Record<string, { table: VersionedTable; column: string }>> = {
  Patient: { table: 'patients', column: 'updated_by' },
  Practitioner: { table: 'providers', column: 'updated_by' },
  PractitionerRole: { table: 'providers', column: 'updated_by' },
  Appointment: { table: 'appointments', column: 'updated_by' },
  Encounter: { table: 'encounters', column: 'updated_by' },
  Condition: { table: 'clinical_records', column: 'updated_by' },
  AllergyIntolerance: { table: 'clinical_records', column: 'updated_by' },
  MedicationStatement: { table: 'clinical_records', column: 'updated_by' },
  MedicationRequest: { table: 'clinical_records', column: 'updated_by' },
  Observation: { table: 'clinical_records', column: 'updated_by' },
  DiagnosticReport: { table: 'clinical_records', column: 'updated_by' },
  DocumentReference: { table: 'documents', column: 'uploaded_by' },
}

const PARTICIPANT_TYPE = 'http://terminology.hl7.org/CodeSystem/provenance-participant-type'

/** The id of the provenance of a record: its type and id (`Condition-12`). */
const provenanceId = (resource: Resource) => `${resource.resourceType}-${resource.id}`

/** For each record, the provider (Practitioner) whose user wrote its current version, if one did. */
async function practitionersOf(
  db: Db,
  organizationId: number,
  resources: readonly Resource[],
): Promise<Map<Resource, number>> {
  const authors = new Map<Resource, number>()
  const byType = new Map<string, Resource[]>()
  for (const resource of resources) {
    if (AUTHORS[resource.resourceType] === undefined) continue
    byType.set(resource.resourceType, [...(byType.get(resource.resourceType) ?? []), resource])
  }
  for (const [type, ofType] of byType) {
    const { table, column } = AUTHORS[type] as { table: VersionedTable; column: string }
    const ids = ofType.map((resource) => Number(resource.id))
    const { rows } = await sql<{ id: number; provider_id: number }>`
      select r.id, p.id as provider_id
      from ${sql.table(table)} as r
      join providers as p on p.organization_id = r.organization_id and p.user_id = r.${sql.ref(column)}
      where r.organization_id = ${organizationId} and r.id in (${sql.join(ids)})`.execute(db)
    const providers = new Map(rows.map((row) => [row.id, row.provider_id]))
    for (const resource of ofType) {
      const provider = providers.get(Number(resource.id))
      if (provider !== undefined) authors.set(resource, provider)
    }
  }
  return authors
}

/**
 * The provenance of each record (as read: its id, version and time): its author, the provider who
 * wrote its current version, on behalf of the organization, or else the organization itself (a
 * user who is no provider, a record no user wrote).
 */
export async function provenancesOf(
  db: Db,
  organizationId: number,
  resources: readonly Resource[],
): Promise<(Provenance & { id: string })[]> {
  if (resources.length === 0) return []
  const practitioners = await practitionersOf(db, organizationId, resources)
  const organization = reference('Organization', organizationId)
  return resources.map((resource) => {
    const practitioner = practitioners.get(resource)
    const provenance: Provenance & { id: string } = {
      resourceType: 'Provenance',
      id: provenanceId(resource),
      meta: { versionId: resource.meta?.versionId, lastUpdated: resource.meta?.lastUpdated },
      target: [{ reference: `${resource.resourceType}/${resource.id}` } as Reference],
      recorded: resource.meta?.lastUpdated ?? new Date(0).toISOString(),
      agent: [
        {
          type: { coding: [{ system: PARTICIPANT_TYPE, code: 'author', display: 'Author' }] },
          ...(practitioner === undefined
            ? { who: organization }
            : { who: reference('Practitioner', practitioner), onBehalfOf: organization }),
        },
      ],
    }
    return claiming(US_CORE_PROVENANCE, provenance)
  })
}
