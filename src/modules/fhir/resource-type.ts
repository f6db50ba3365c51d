import type { Resource } from '@medplum/fhirtypes'
import type { Db } from '../../../db/database.js'
import type { Actor } from '../../access/organization-scope.js'
import type { RouteKey } from '../../access/route-access.js'
import type { KeptVersions } from './kept-versions.js'
import type { ResourceWrites } from './resource-writes.js'
import type { PageRequest, SearchPage, SearchQuery } from './search-params.js'

/** A search parameter as the CapabilityStatement declares it. */
export interface SearchParameterDefinition {
  name: string
  type: 'token' | 'string' | 'date' | 'reference'
  documentation: string
}

/** Whom a read or search is for: the caller, and the patient a SMART launch keeps it to. */
export interface ReadScope {
  actor: Actor
  /** Only this patient's compartment (a `patient/` scope with a launch patient). */
  patient: number | undefined
  /** Only the compartments of a provider's patients, those with appointments with them (a Group's export). */
  providerPatients?: number
}

/**
 * One FHIR resource type over the service's tables: the mapping from rows, the search parameters
 * and their conditions, and the REST routes whose roles and audit rules it follows.
 */
export interface FhirResourceType<R extends Resource = Resource> {
  type: R['resourceType']
  /**
   * The profile (canonical URL and version) its resources claim in `meta.profile`, its
   * supportedProfile; several when its records claim different ones (a Condition's category).
   */
  profile?: string | readonly string[]
  /** `METHOD /api/...` of the REST read and list of the same records (their roles and audit). */
  restRead: RouteKey
  restSearch: RouteKey
  /**
   * What a patient's own account (PATIENT) reads and searches of the type, besides what the REST
   * routes' roles allow: `compartment`, the records of its own compartment (a type with a patient
   * column); `directory`, the organization's records, which hold nothing about patients
   * (practitioners). Absent: nothing. It never writes.
   */
  patientAccess?: 'compartment' | 'directory'
  /** For a resource whose records have REST routes of their own (lab results among Observations): those, for its audit. */
  restRoutesOf?(resource: R): { read: RouteKey; search: RouteKey } | undefined
  /** Its own search parameters; every type also takes `_id` and `_lastUpdated` (COMMON_SEARCH_PARAMETERS). */
  searchParameters: SearchParameterDefinition[]
  /** The parameters `_sort` may name. */
  sortParameters: string[]
  /** The record (403 for another organization's, 404 when there is none, 410 when removed). */
  read(db: Db, scope: ReadScope, id: number): Promise<R & { id: string }>
  /** Its records' earlier versions (`_history`, `vread` of any version); absent: only the current one. */
  versions?: KeptVersions<R>
  /** Creates, updates and deletes through the domain service of its REST routes; absent: read-only. */
  writes?: ResourceWrites<R>
  /** The patient id a resource is of, for the audit of its read: a read-only type's (others' writes say it). */
  patientOf?(resource: R): number | undefined
  /** One page of matches in the requested order; unknown parameters are the caller's business. */
  search(
    db: Db,
    scope: ReadScope,
    query: SearchQuery,
    page: PageRequest,
  ): Promise<SearchPage<R & { id: string }>>
  /** How many records match, for `_summary=count`. */
  count(db: Db, scope: ReadScope, query: SearchQuery): Promise<number>
  /**
   * The references `_include=<Type>:<name>` follows, by name (e.g. `patient`, `practitioner`):
   * for one resource, the references it holds (`Patient/12`).
   */
  includes?: Record<string, (resource: R) => string[]>
}
