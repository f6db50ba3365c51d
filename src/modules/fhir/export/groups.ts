import type { Group } from '@medplum/fhirtypes'
import type { Db } from '../../../../db/database.js'

/** The Group of all the organization's patients. */
const ALL_PATIENTS = 'all-patients'

const PROVIDER_GROUP = /^provider-([1-9][0-9]{0,9})$/

/** The provider whose patients a Group id names (`provider-12`), if it names one. */
export function providerOfGroup(id: string): number | undefined {
  const match = PROVIDER_GROUP.exec(id)
  const provider = match ? Number(match[1]) : undefined
  return provider !== undefined && provider <= 2_147_483_647 ? provider : undefined
}

function allPatients(): Group & { id: string } {
  return {
    resourceType: 'Group',
    id: ALL_PATIENTS,
    type: 'person',
    actual: true,
    name: 'All patients',
    characteristic: [{ code: { text: 'Patient of the organization' }, valueBoolean: true, exclude: false }],
  }
}

function providerGroup(provider: {
  id: number
  first_name: string
  last_name: string
}): Group & { id: string } {
  return {
    resourceType: 'Group',
    id: `provider-${provider.id}`,
    type: 'person',
    actual: true,
    name: `Patients of ${provider.first_name} ${provider.last_name}`,
    managingEntity: { reference: `Practitioner/${provider.id}` },
    characteristic: [
      {
        code: { text: 'Has an appointment with the practitioner' },
        valueReference: { reference: `Practitioner/${provider.id}` },
        exclude: false,
      },
    ],
  }
}

const providersOf = (db: Db, organizationId: number) =>
  db
    .selectFrom('providers')
    .select(['id', 'first_name', 'last_name'])
    .where('organization_id', '=', organizationId)
    .orderBy('id')

/**
 * The Groups bulk export serves: every patient of the organization, and one per provider for the
 * patients with appointments with them. They are views, not stored lists: membership is decided
 * when an export runs.
 */
export async function groupsOf(db: Db, organizationId: number): Promise<(Group & { id: string })[]> {
  const providers = await providersOf(db, organizationId).execute()
  return [allPatients(), ...providers.map(providerGroup)]
}

export async function findGroup(
  db: Db,
  organizationId: number,
  id: string,
): Promise<(Group & { id: string }) | undefined> {
  if (id === ALL_PATIENTS) return allPatients()
  const provider = providerOfGroup(id)
  if (provider === undefined) return undefined
  const row = await providersOf(db, organizationId).where('id', '=', provider).executeTakeFirst()
  return row ? providerGroup(row) : undefined
}
