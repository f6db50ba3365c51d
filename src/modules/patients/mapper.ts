import type { PatientRow } from '../../../db/tables/patients.js'
import type { CreatePatientBody, Patient } from '../../../schemas/patients.js'

type Race = NonNullable<Patient['race']>
type Ethnicity = NonNullable<Patient['ethnicity']>

import { column, eventMapping, isSet } from '../../outbox/event-mapping.js'

/** The API's grouped patient from a row; only what the response schema declares is ever sent. */
export function toPatient(row: PatientRow): Patient {
  const hasEmergencyContact = row.emergency_contact_name !== null && row.emergency_contact_phone !== null
  return {
    id: row.id,
    mrn: row.mrn,
    status: row.status,
    identification: {
      firstName: row.first_name,
      middleName: row.middle_name,
      lastName: row.last_name,
      dateOfBirth: row.date_of_birth,
      gender: row.gender as Patient['identification']['gender'],
    },
    contact: {
      email: row.email,
      phoneNumber: row.phone_number,
      address: {
        street: row.address_street,
        city: row.address_city,
        state: row.address_state,
        postalCode: row.address_postal_code,
        country: row.address_country,
      },
    },
    emergencyContact: hasEmergencyContact
      ? {
          name: row.emergency_contact_name as string,
          relationship: row.emergency_contact_relationship,
          phoneNumber: row.emergency_contact_phone as string,
        }
      : null,
    preferredLanguage: row.preferred_language,
    race: row.race_categories
      ? {
          categories: row.race_categories as Race['categories'],
          detailed: row.race_detailed ?? [],
          text: row.race_text,
        }
      : null,
    ethnicity: row.ethnicity_category
      ? {
          category: row.ethnicity_category as Ethnicity['category'],
          detailed: row.ethnicity_detailed ?? [],
          text: row.ethnicity_text,
        }
      : null,
    birthSex: row.birth_sex as Patient['birthSex'],
    genderIdentity: row.gender_identity as Patient['genderIdentity'],
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    version: row.version,
  }
}

/** Row columns for the demographic part of a create or full-replace body (not mrn or status). */
export function demographicColumns(body: CreatePatientBody) {
  const { identification, contact, emergencyContact, race, ethnicity } = body
  const address = contact?.address
  return {
    first_name: identification.firstName,
    middle_name: identification.middleName ?? null,
    last_name: identification.lastName,
    date_of_birth: identification.dateOfBirth,
    gender: identification.gender,
    email: contact?.email ?? null,
    phone_number: contact?.phoneNumber ?? null,
    address_street: address?.street ?? null,
    address_city: address?.city ?? null,
    address_state: address?.state ?? null,
    address_postal_code: address?.postalCode ?? null,
    address_country: address?.country ?? null,
    emergency_contact_name: emergencyContact?.name ?? null,
    emergency_contact_relationship: emergencyContact?.relationship ?? null,
    emergency_contact_phone: emergencyContact?.phoneNumber ?? null,
    preferred_language: body.preferredLanguage ?? null,
    race_categories: race ? race.categories : null,
    race_detailed: race ? (race.detailed ?? []) : null,
    race_text: race?.text ?? null,
    ethnicity_category: ethnicity?.category ?? null,
    ethnicity_detailed: ethnicity ? (ethnicity.detailed ?? []) : null,
    ethnicity_text: ethnicity?.text ?? null,
    birth_sex: body.birthSex ?? null,
    gender_identity: body.genderIdentity ?? null,
  }
}

/** The data of patient.created and patient.updated: identifiers only, no demographics. */
export const patientEvent = eventMapping<'patient.created', PatientRow>({
  id: column('id'),
  mrn: column('mrn'),
  status: column('status'),
  version: column('version'),
  deleted: isSet('deleted_at'),
})
