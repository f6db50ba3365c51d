/**
 * The sorted first page's two statements, as the service sends them for `GET /api/patients` with
 * no filter, sorted by last name (20 patients): written out here so that ceiling S runs them with
 * pg alone and measures the database and the driver, not the service's query code.
 * tests/unit/scripts/bench-ceiling.test.ts fails when the service's statements move away from these.
 */
const PATIENT_COLUMNS = [
  'id',
  'organization_id',
  'mrn',
  'status',
  'first_name',
  'middle_name',
  'last_name',
  'date_of_birth',
  'gender',
  'email',
  'phone_number',
  'address_street',
  'address_city',
  'address_state',
  'address_postal_code',
  'address_country',
  'emergency_contact_name',
  'emergency_contact_relationship',
  'emergency_contact_phone',
  'preferred_language',
  'race_categories',
  'race_detailed',
  'race_text',
  'ethnicity_category',
  'ethnicity_detailed',
  'ethnicity_text',
  'birth_sex',
  'gender_identity',
  'created_by',
  'updated_by',
  'created_at',
  'updated_at',
  'version',
  'deleted_at',
  'deleted_by',
]

export const SORTED_PAGE_SIZE = 20

/** The page: $1 the organization, $2 the page size, $3 the offset. */
export const SORTED_PAGE_SQL = `select ${PATIENT_COLUMNS.map((column) => `"${column}"`).join(', ')} from "patients" where "organization_id" = $1 and "deleted_at" is null order by lower(last_name) asc, id asc limit $2 offset $3`

/** The total, from the maintained counts: $1 the organization. */
export const SORTED_PAGE_TOTAL_SQL = `select coalesce(sum(live_count), 0)::int as "total" from "patient_counts" where "organization_id" = $1`
