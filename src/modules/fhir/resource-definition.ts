import type { Resource } from '@medplum/fhirtypes'
import type { SelectQueryBuilder } from 'kysely'
import type { Db } from '../../../db/database.js'
import type { FhirResourceType, ReadScope } from './resource-type.js'
import {
  type AnyQuery,
  countMatches,
  inCompartment,
  keysetPage,
  type SearchColumns,
  type SearchParameter,
  sortParameters,
  whereCommon,
} from './search-conditions.js'
import { occurrences, type SearchQuery } from './search-params.js'

type RowOf<Q> = Q extends SelectQueryBuilder<infer _DB, infer _TB, infer O> ? O : never

/**
 * What is particular to one FHIR resource type: its records, their mapping, its search parameters
 * and its REST routes. defineResourceType adds what every type does alike.
 */
export interface ResourceDefinition<R extends Resource, Q extends AnyQuery>
  extends Pick<
    FhirResourceType<R>,
    | 'type'
    | 'profile'
    | 'restRead'
    | 'restSearch'
    | 'restRoutesOf'
    | 'includes'
    | 'read'
    | 'versions'
    | 'writes'
    | 'patientAccess'
    | 'patientOf'
  > {
  /** The organization's records of the type, whichever patient's. */
  records(db: Db, scope: ReadScope): Q
  /** The column of a record's patient: searches keep to the scope's compartments by it (none: outside them). */
  patientColumn?: string
  columns: SearchColumns
  /** Its own search parameters, in the CapabilityStatement's order. */
  searchParameters: SearchParameter<Q>[]
  /** Refuses a search its parameters cannot serve, whichever of them it uses. */
  checkSearch?(search: SearchQuery): void
  toFhir(row: RowOf<Q>): R & { id: string }
}

/**
 * A FHIR resource type from its definition: searches take `_id`, `_lastUpdated` and the type's
 * own parameters, are kept to the scope's compartments, sort by `_sort`, page by keyset and count.
 */
export function defineResourceType<R extends Resource, Q extends AnyQuery>(
  definition: ResourceDefinition<R, Q>,
): FhirResourceType<R> {
  const { records, patientColumn, columns, checkSearch, toFhir, ...declared } = definition
  const matching = (db: Db, scope: ReadScope, search: SearchQuery): Q => {
    const inScope = patientColumn
      ? inCompartment(records(db, scope), scope, patientColumn)
      : records(db, scope)
    let query = whereCommon(inScope, search, columns)
    checkSearch?.(search)
    for (const parameter of definition.searchParameters) {
      for (const values of occurrences(search, parameter.name)) query = parameter.where(query, values, search)
    }
    return query
  }
  return {
    ...declared,
    // A type with a patient column is in the patient compartment: a patient reads their own records.
    patientAccess: patientColumn ? 'compartment' : declared.patientAccess,
    sortParameters: sortParameters(columns),
    search: (db, scope, search, page) => keysetPage(matching(db, scope, search), columns, page, toFhir),
    count: (db, scope, search) => countMatches(matching(db, scope, search)),
  }
}
