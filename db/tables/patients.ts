import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'
import type { PATIENT_STATUSES } from '../../schemas/patients.js'

export interface PatientsTable {
  id: ColumnType<number, never, never>
  organization_id: number
  mrn: Generated<string>
  status: Generated<(typeof PATIENT_STATUSES)[number]>
  first_name: string
  middle_name: string | null
  last_name: string
  /** YYYY-MM-DD; the driver is told to leave dates as text so no time zone can shift them. */
  date_of_birth: string
  gender: string
  email: string | null
  phone_number: string | null
  address_street: string | null
  address_city: string | null
  address_state: string | null
  address_postal_code: string | null
  address_country: string | null
  emergency_contact_name: string | null
  emergency_contact_relationship: string | null
  emergency_contact_phone: string | null
  preferred_language: string | null
  /** OMB race categories; null when race is not recorded, and then so are the two after it. */
  race_categories: string[] | null
  race_detailed: string[] | null
  race_text: string | null
  ethnicity_category: string | null
  ethnicity_detailed: string[] | null
  ethnicity_text: string | null
  birth_sex: string | null
  gender_identity: string | null
  created_by: number | null
  updated_by: number | null
  created_at: Generated<Date>
  updated_at: Generated<Date>
  /** Incremented by the database on every change of the row. */
  version: Generated<number>
  deleted_at: Date | null
  deleted_by: number | null
  search_text: ColumnType<string, never, never>
}

/** A patient as read: every column but `search_text`, an index key the API never shows. */
export type PatientRow = Omit<Selectable<PatientsTable>, 'search_text'>
export type NewPatientRow = Insertable<PatientsTable>
export type PatientRowUpdate = Updateable<PatientsTable>
