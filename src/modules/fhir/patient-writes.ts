import type { ContactPoint, Patient } from '@medplum/fhirtypes'
import type { PatientRow } from '../../../db/tables/patients.js'
import { CreatePatientBody } from '../../../schemas/patients.js'
import {
  checkDetailedCodes,
  deletePatient,
  demographicColumns,
  insertPatient,
  replacePatient,
} from '../patients/service.js'
import { BIRTH_SEX, demographicsOf, ETHNICITY, GENDER_IDENTITY, RACE } from './patient-demographics.js'
import { present, withoutUndefined } from './resource-elements.js'
import type { ResourceWrites } from './resource-writes.js'

type PatientBody = CreatePatientBody

const GENDER_OF_FHIR: Record<string, PatientBody['identification']['gender']> = {
  male: 'Male',
  female: 'Female',
  other: 'Other',
  unknown: 'Unknown',
}

// What a preview's row holds besides the body's columns: nothing the comparison looks at.
const PREVIEW_ROW = {
  id: 0,
  organization_id: 0,
  version: 1,
  created_at: new Date(0),
  updated_at: new Date(0),
  created_by: null,
  updated_by: null,
  deleted_at: null,
  deleted_by: null,
}

const telecomValue = (telecom: ContactPoint[] | undefined, system: ContactPoint['system']) =>
  telecom?.find((point) => point.system === system)?.value

/** The REST body of a FHIR Patient: the official name (or the first), the MRN identifier, the first address and contact. */
function patientBody(patient: Patient, mrnSystem: string): PatientBody {
  const name = patient.name?.find((candidate) => candidate.use === 'official') ?? patient.name?.[0]
  const address = patient.address?.[0]
  const contact = patient.contact?.[0]
  const contactName =
    contact?.name?.text ??
    ([...(contact?.name?.given ?? []), contact?.name?.family].join(' ').trim() || undefined)
  const language = patient.communication?.[0]?.language?.coding?.find(
    (coding) => coding.system === 'urn:ietf:bcp:47',
  )?.code
  const status = patient.deceasedBoolean ? 'DECEASED' : patient.active === false ? 'INACTIVE' : 'ACTIVE'
  return withoutUndefined({
    identification: withoutUndefined({
      firstName: name?.given?.[0],
      middleName: name?.given?.[1],
      lastName: name?.family,
      dateOfBirth: patient.birthDate,
      gender: patient.gender === undefined ? undefined : GENDER_OF_FHIR[patient.gender],
    }) as PatientBody['identification'],
    contact: present({
      email: telecomValue(patient.telecom, 'email'),
      phoneNumber: telecomValue(patient.telecom, 'phone'),
      address:
        address &&
        present({
          street: address.line?.[0],
          city: address.city,
          state: address.state,
          postalCode: address.postalCode,
          country: address.country,
        }),
    }),
    emergencyContact:
      contact &&
      (withoutUndefined({
        name: contactName,
        relationship: contact.relationship?.[0]?.text,
        phoneNumber: telecomValue(contact.telecom, 'phone'),
      }) as PatientBody['emergencyContact']),
    preferredLanguage: language,
    ...demographicsOf(patient),
    mrn: patient.identifier?.find((identifier) => identifier.system === mrnSystem)?.value,
    status,
  } satisfies PatientBody)
}

/** Patient writes through the patients service: those of `POST`, `PUT` and `DELETE /api/patients`. */
export function patientWrites(
  mrnSystem: string,
  toFhir: (row: PatientRow) => Patient & { id: string },
): ResourceWrites<Patient, PatientBody> {
  return {
    rest: {
      create: 'POST /api/patients',
      update: 'PUT /api/patients/:id',
      delete: 'DELETE /api/patients/:id',
    },
    bodySchema: CreatePatientBody,
    fieldExpressions: {
      'identification.firstName': 'Patient.name.given',
      'identification.middleName': 'Patient.name.given',
      'identification.lastName': 'Patient.name.family',
      'identification.dateOfBirth': 'Patient.birthDate',
      'identification.gender': 'Patient.gender',
      identification: 'Patient.name',
      'contact.email': 'Patient.telecom',
      'contact.phoneNumber': 'Patient.telecom',
      'contact.address.street': 'Patient.address.line',
      'contact.address.city': 'Patient.address.city',
      'contact.address.state': 'Patient.address.state',
      'contact.address.postalCode': 'Patient.address.postalCode',
      'contact.address.country': 'Patient.address.country',
      emergencyContact: 'Patient.contact',
      preferredLanguage: 'Patient.communication.language',
      race: `Patient.extension('${RACE}')`,
      ethnicity: `Patient.extension('${ETHNICITY}')`,
      birthSex: `Patient.extension('${BIRTH_SEX}')`,
      genderIdentity: `Patient.extension('${GENDER_IDENTITY}')`,
      mrn: 'Patient.identifier',
    },
    bodyOf: (patient) => patientBody(patient, mrnSystem),
    // Unknown detailed codes are refused as such, before the preview, whose displays they lack.
    preview: (body) => {
      checkDetailedCodes(body)
      return toFhir({
        ...PREVIEW_ROW,
        ...demographicColumns(body),
        mrn: body.mrn ?? '',
        status: body.status ?? 'ACTIVE',
      })
    },
    patientOf: (patient) => (patient.id === undefined ? undefined : Number(patient.id)),
    create: async (db, actor, body) => toFhir(await insertPatient(db, actor, body)),
    update: async (db, actor, id, body, expected) =>
      toFhir(await replacePatient(db, actor, id, body, expected)),
    delete: async (db, actor, id, expected) => {
      await deletePatient(db, actor, id, expected)
    },
  }
}
