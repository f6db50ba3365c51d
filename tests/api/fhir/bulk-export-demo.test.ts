import type { Observation } from '@medplum/fhirtypes'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp, openTestDatabase } from '../../helpers/app.js'
import { danglingReferences, exported, exportedResources } from '../../helpers/bulk-export.js'
import { demoPractice } from '../../helpers/demo-practice.js'

// A database of its own: the demo practice fills the only organization of an empty database.
let app: App

beforeAll(async () => {
  app = await buildTestApp({}, undefined, { database: await openTestDatabase() })
})
afterAll(async () => {
  await app.close()
})

describe('a bulk export of the demo practice (npm run seed)', () => {
  it('validates line by line against R4, and every reference resolves within it', async () => {
    const { counts, token } = await demoPractice(app, { patients: 20, roles: ['PROVIDER'] })

    const { manifest } = await exported(app, token, '/$export')
    expect(manifest.error).toEqual([])
    const byType = await exportedResources(app, token, manifest)
    expect(byType.get('Patient')).toHaveLength(counts.patients)
    expect(byType.get('Practitioner')).toHaveLength(counts.providers)
    expect(byType.get('Encounter')).toHaveLength(counts.encounters)
    expect(byType.get('Appointment')).toHaveLength(counts.appointments)
    // Each measurement of a vital signs panel is an Observation too, which its panel references.
    const observations = (byType.get('Observation') ?? []) as Observation[]
    const measurements = new Set(
      observations.flatMap((observation) => (observation.hasMember ?? []).map((member) => member.reference)),
    )
    expect(measurements.size).toBeGreaterThan(0)
    const clinical = ['Observation', 'Condition', 'AllergyIntolerance', 'MedicationStatement']
    expect(clinical.reduce((sum, type) => sum + (byType.get(type)?.length ?? 0), 0)).toBe(
      counts.clinicalRecords + measurements.size,
    )
    // The medication list again, as US Core MedicationRequest.
    expect(byType.get('MedicationRequest')?.length).toBe(byType.get('MedicationStatement')?.length)
    expect(danglingReferences(byType)).toEqual([])
  })
})
