import type { Migration } from 'kysely'
import * as initial from './0001_initial.js'
import * as identity from './0002_identity.js'
import * as scheduling from './0003_scheduling.js'
import * as webhooks from './0004_webhooks.js'
import * as documents from './0005_documents.js'
import * as clinical from './0006_clinical.js'
import * as messages from './0007_messages.js'
import * as billing from './0008_billing.js'
import * as telehealth from './0009_telehealth.js'
import * as patientCounts from './0010_patient_counts.js'
import * as auditPatient from './0011_audit_patient.js'
import * as patientNameCounts from './0012_patient_name_counts.js'
import * as deferredPatientCounts from './0013_deferred_patient_counts.js'
import * as searchPendingList from './0014_search_pending_list.js'
import * as patientNameWords from './0015_patient_name_words.js'
import * as recordVersions from './0016_record_versions.js'
import * as syncTimes from './0017_sync_times.js'
import * as clientSecretRotation from './0018_client_secret_rotation.js'
import * as bulkExports from './0019_bulk_exports.js'
import * as clientAssertionKeys from './0020_client_assertion_keys.js'
import * as signingKeyEncryption from './0021_signing_key_encryption.js'
import * as sessionRevocationIndex from './0022_session_revocation_index.js'
import * as organizationKeys from './0023_organization_keys.js'
import * as tokenExpiryIndexes from './0024_token_expiry_indexes.js'
import * as sessionScopes from './0025_session_scopes.js'
import * as auditPatientIdsIndex from './0026_audit_patient_ids_index.js'
import * as recordHistory from './0027_record_history.js'
import * as smartLaunch from './0028_smart_launch.js'
import * as patientDemographics from './0029_patient_demographics.js'
import * as assertionJtis from './0030_assertion_jtis.js'
import * as organizationVersions from './0031_organization_versions.js'
import * as encounterDiagnoses from './0033_encounter_diagnoses.js'
import * as practiceDetails from './0034_practice_details.js'
import * as vitalSignMembers from './0035_vital_sign_members.js'

/** Every migration, in order. Listed rather than scanned so tsx and compiled JS behave alike. */
export const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0002_identity': identity,
  '0004_webhooks': webhooks,
  '0005_documents': documents,
  '0006_clinical': clinical,
  '0007_messages': messages,
  '0008_billing': billing,
  '0009_telehealth': telehealth,
  '0010_patient_counts': patientCounts,
  '0003_scheduling': scheduling,
  '0011_audit_patient': auditPatient,
  '0012_patient_name_counts': patientNameCounts,
  '0013_deferred_patient_counts': deferredPatientCounts,
  '0014_search_pending_list': searchPendingList,
  '0015_patient_name_words': patientNameWords,
  '0016_record_versions': recordVersions,
  '0017_sync_times': syncTimes,
  '0018_client_secret_rotation': clientSecretRotation,
  '0019_bulk_exports': bulkExports,
  '0020_client_assertion_keys': clientAssertionKeys,
  '0021_signing_key_encryption': signingKeyEncryption,
  '0022_session_revocation_index': sessionRevocationIndex,
  '0023_organization_keys': organizationKeys,
  '0024_token_expiry_indexes': tokenExpiryIndexes,
  '0025_session_scopes': sessionScopes,
  '0026_audit_patient_ids_index': auditPatientIdsIndex,
  '0027_record_history': recordHistory,
  '0028_smart_launch': smartLaunch,
  '0029_patient_demographics': patientDemographics,
  '0030_assertion_jtis': assertionJtis,
  '0031_organization_versions': organizationVersions,
  '0033_encounter_diagnoses': encounterDiagnoses,
  '0034_practice_details': practiceDetails,
  '0035_vital_sign_members': vitalSignMembers,
}
