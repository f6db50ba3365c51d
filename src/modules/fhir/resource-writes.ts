import type { Resource } from '@medplum/fhirtypes'
import type { TSchema } from '@sinclair/typebox'
import type { Db } from '../../../db/database.js'
import type { RouteKey } from '../../access/route-access.js'
import type { Principal } from '../../identity/principal.js'
import type { ExpectedVersion } from '../../lib/versions.js'

/**
 * How FHIR writes of one type reach the domain service behind its REST routes, so that a FHIR write
 * and a REST write of the same record are alike afterwards: the same rules, events, audit records,
 * versions and ETags. `B` is the REST body a resource stands for.
 */
export interface ResourceWrites<R extends Resource, B = unknown> {
  /**
   * The REST routes of the same changes: their roles, and the rule of their audit records. No
   * delete route: the type's records are not deleted (DELETE is 405).
   */
  rest: { create: RouteKey; update: RouteKey; delete?: RouteKey }
  /** The schema of the REST body: a resource's body is checked by it as the REST route's is. */
  bodySchema: TSchema
  /**
   * The FHIRPath of each REST body field a domain rule may refuse (`identification.dateOfBirth`:
   * `Patient.birthDate`), so that its 422 names the element sent.
   */
  fieldExpressions: Readonly<Record<string, string>>
  /** The REST body the resource stands for; a value it cannot take is a 422 naming the element. */
  bodyOf(resource: R): B
  /**
   * The resource as a read would answer once `body` is stored (its id, version and times aside):
   * what the write keeps of the resource sent, which must be all of it. On an update, `current` is
   * the resource as it is: what a body does not hold stays as it is (an Appointment's `created`).
   * `organizationId`: the caller's, whose records the resource references (an Encounter's serviceProvider).
   */
  preview(body: B, current: R | undefined, organizationId: number): R
  /** The patient whose compartment a resource is in, if any: a `patient/` scope writes only its own. */
  patientOf(resource: R): number | undefined
  create(db: Db, actor: Principal, body: B): Promise<R & { id: string }>
  /** Changes nothing, and keeps the version, when the body is what the record holds. */
  update(
    db: Db,
    actor: Principal,
    id: number,
    body: B,
    expected: ExpectedVersion,
  ): Promise<R & { id: string }>
  /** Present exactly when `rest.delete` is. */
  delete?(db: Db, actor: Principal, id: number, expected: ExpectedVersion): Promise<void>
  /**
   * For a type whose records are of several kinds, each written through REST routes of its own (an
   * Observation is vital signs or a lab result): the writes of the kind `resource` is of, for it.
   * Their routes' roles and audit rule then apply; the type's own members are those of the kind
   * whose roles are the widest, so that its roles admit a caller to the type's writes at all.
   * `current`: the resource an update replaces, whose kind it cannot change. A resource of no
   * kind, or of another kind than `current`, is a 422 naming the element that tells the kind.
   */
  kindOf?(resource: R, current?: R): ResourceWrites<R>
}
