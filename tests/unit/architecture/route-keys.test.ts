import { tmpdir } from 'node:os'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { accessRuleOf, ROUTE_ACCESS, type RouteKey } from '../../../src/access/route-access.js'
import { localStore } from '../../../src/modules/documents/store.js'
import type { FhirResourceType } from '../../../src/modules/fhir/resource-type.js'
import { resourceTypes } from '../../../src/modules/fhir/resource-types.js'

describe('route keys of the access table', () => {
  it('are a type: a FHIR type names its REST routes by a key the table has, checked by the compiler', () => {
    expectTypeOf<FhirResourceType['restRead']>().toEqualTypeOf<RouteKey>()
    expectTypeOf<FhirResourceType['restSearch']>().toEqualTypeOf<RouteKey>()
    // @ts-expect-error a route the table does not have is not a key
    const missing: RouteKey = 'GET /api/patients/:id/nothing'
    const clinical: RouteKey = 'POST /api/patients/:patientId/conditions/:id/entered-in-error'
    expect([accessRuleOf(missing), accessRuleOf(clinical)?.audit]).toEqual([
      undefined,
      { resourceType: 'condition', action: 'UPDATE' },
    ])
  })

  it('find a route registered at run time, and nothing for keys an object inherits', () => {
    expect(accessRuleOf('GET /api/patients')).toBe(ROUTE_ACCESS['GET /api/patients'])
    expect(['constructor', 'toString', '__proto__'].map(accessRuleOf)).toEqual([
      undefined,
      undefined,
      undefined,
    ])
  })

  it('of every FHIR type served are in the table', () => {
    const types = resourceTypes({
      mrnSystem: 'urn:example:mrn',
      base: 'http://127.0.0.1/fhir/R4',
      // Never used: the routes of the types are all that is looked at.
      documents: { store: localStore(tmpdir()), maxBytes: 1024, retentionDays: 0 },
    })
    const keys = types.flatMap((type) => [type.restRead, type.restSearch])
    expect(keys.filter((key) => accessRuleOf(key) === undefined)).toEqual([])
    expect(keys.length).toBe(types.length * 2)
  })
})
