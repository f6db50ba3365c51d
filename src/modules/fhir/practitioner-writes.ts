import type { ContactPoint, Practitioner } from '@medplum/fhirtypes'
import type { ProviderRow } from '../../../db/tables/providers.js'
import { UpdateProviderBody } from '../../../schemas/providers.js'
import { invalidField } from '../../errors.js'
import { canonicalTimeZone } from '../../scheduling/zoned-time.js'
import { insertProvider, providerColumns, replaceProvider } from '../providers/service.js'
import { withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'

/**
 * The REST body a Practitioner stands for: the provider's record without what FHIR does not speak
 * of (the user account link, the slot length), which a write leaves as it is.
 */
type PractitionerBody = Omit<UpdateProviderBody, 'userId' | 'slotMinutes'>

/** The NPI's identifier system and the extension of the time zone, as the read mapping has them. */
interface PractitionerSystems {
  npiSystem: string
  timeZoneExtension: string
}

// What a preview's row holds besides the body's columns: nothing the comparison looks at.
const PREVIEW_ROW = {
  id: 0,
  organization_id: 0,
  slot_minutes: 0,
  version: 1,
  created_at: new Date(0),
  updated_at: new Date(0),
  created_by: null,
  updated_by: null,
}

const telecomValue = (telecom: ContactPoint[] | undefined, system: ContactPoint['system']) =>
  telecom?.find((point) => point.system === system)?.value

/**
 * The provider's IANA time zone, which the REST body requires and R4 Practitioner has no element
 * for: the timezone extension's code, under the canonical name the service stores (an alias would
 * be read back as another value).
 */
function timeZoneOf(practitioner: Practitioner, extension: string): string {
  const zone = practitioner.extension?.find((candidate) => candidate.url === extension)?.valueCode
  if (zone === undefined) {
    throw invalidField(
      'timeZone',
      `needs the extension ${extension} with valueCode, the IANA time zone of the provider’s hours (America/New_York)`,
    )
  }
  const canonical = canonicalTimeZone(zone)
  if (canonical !== undefined && canonical !== zone) {
    throw invalidField('timeZone', `${zone} is stored under its canonical name: send ${canonical}`)
  }
  return zone
}

/**
 * The REST body of a FHIR Practitioner: the official name (or the first), its suffix the title; the
 * NPI identifier; the first e-mail address and phone number; the time zone extension. A read shows
 * the title both as the name's suffix and as a qualification, so the specialty is the qualification
 * that is not the title.
 */
function practitionerBody(practitioner: Practitioner, systems: PractitionerSystems): PractitionerBody {
  const name = practitioner.name?.find((candidate) => candidate.use === 'official') ?? practitioner.name?.[0]
  const title = name?.suffix?.[0]
  const qualifications = practitioner.qualification?.map((qualification) => qualification.code?.text) ?? []
  const titleAt = title === undefined ? -1 : qualifications.indexOf(title)
  const specialty = qualifications.find((text, index) => index !== titleAt && text !== undefined)
  return withoutUndefined({
    firstName: name?.given?.[0],
    lastName: name?.family,
    title,
    specialty,
    npi: practitioner.identifier?.find((identifier) => identifier.system === systems.npiSystem)?.value,
    email: telecomValue(practitioner.telecom, 'email'),
    phoneNumber: telecomValue(practitioner.telecom, 'phone'),
    active: practitioner.active,
    timeZone: timeZoneOf(practitioner, systems.timeZoneExtension),
  }) as PractitionerBody
}

/**
 * Practitioner writes through the providers service: those of `POST` and `PUT /api/providers`.
 * Providers are never removed, so there is no delete. An update keeps what FHIR does not carry:
 * the user account link, the slot length, the weekly hours, and `active` when left out.
 */
export function practitionerWrites(
  systems: PractitionerSystems,
  toFhir: (row: ProviderRow) => Practitioner & { id: string },
): ResourceWrites<Practitioner, PractitionerBody> {
  return {
    rest: { create: 'POST /api/providers', update: 'PUT /api/providers/:id' },
    bodySchema: UpdateProviderBody,
    fieldExpressions: {
      firstName: 'Practitioner.name.given',
      lastName: 'Practitioner.name.family',
      title: 'Practitioner.name.suffix',
      specialty: 'Practitioner.qualification.code.text',
      npi: 'Practitioner.identifier',
      email: 'Practitioner.telecom',
      phoneNumber: 'Practitioner.telecom',
      active: 'Practitioner.active',
      timeZone: 'Practitioner.extension',
    },
    bodyOf: (practitioner) => practitionerBody(practitioner, systems),
    preview: (body) =>
      toFhir({
        ...PREVIEW_ROW,
        ...providerColumns(body, body.timeZone),
        active: body.active ?? true,
      }),
    // Practitioners are in no patient's compartment: a patient/ scope writes none.
    patientOf: () => undefined,
    create: async (db, actor, body) => toFhir(await insertProvider(db, actor, body)),
    update: async (db, actor, id, body, expected) =>
      toFhir(await replaceProvider(db, actor, id, body, expected)),
  }
}
