import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { down, up } from '../../db/migrations/0035_vital_sign_members.js'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { bearer, createPatient, newOrganization } from '../helpers/factories.js'

// Migration 0035 on a database holding vital signs from before it: each panel gets its members,
// and the panels themselves do not change (version, change time, history).

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

interface Row {
  id: number
  kind: string
  status: string
  code: string | null
  version: number
  updated_at: Date
  effective_at: Date
  patient_id: number
  data: Record<string, unknown>
  member_ids: Record<string, number> | null
}

const rowsOf = async (organizationId: number) =>
  // member_ids through jsonb: the column is not there before the migration.
  (
    await sql<Row>`select id, kind, status, code, version, updated_at, effective_at, patient_id, data,
        to_jsonb(r) -> 'member_ids' as member_ids
      from clinical_records as r where organization_id = ${organizationId} order by id`.execute(app.db)
  ).rows

const historyCount = async (organizationId: number) =>
  Number(
    (
      await sql<{ n: number }>`select count(*)::int as n from record_history
        where organization_id = ${organizationId} and table_name = 'clinical_records'`.execute(app.db)
    ).rows[0]?.n,
  )

describe('migration 0035_vital_sign_members', () => {
  it('backfills the members of the panels stored before it, leaving the panels as they were', async () => {
    const org = await newOrganization(app)
    const nurse = await org.user('NURSE')
    const patient = await createPatient(app, nurse)
    const recorded = await app.inject({
      method: 'POST',
      url: `/api/patients/${patient}/vitals`,
      headers: bearer(nurse.token),
      payload: { recordedAt: '2024-01-01T08:00:00Z', heartRate: 60, systolic: 120, diastolic: 80 },
    })
    expect(recorded.statusCode).toBe(201)
    const corrected = await app.inject({
      method: 'PUT',
      url: `/api/patients/${patient}/vitals/${recorded.json().data.id}`,
      headers: bearer(nurse.token),
      payload: { recordedAt: '2024-01-01T08:00:00Z', heartRate: 62, systolic: 120, diastolic: 80 },
    })
    expect(corrected.statusCode).toBe(200)

    await down(app.db)
    const before = await rowsOf(org.id)
    expect(before.map((row) => row.kind)).toEqual(['VITAL_SIGNS'])
    const historyBefore = await historyCount(org.id)
    // A panel written before the migration by no service at all.
    await sql`insert into clinical_records (organization_id, patient_id, kind, status, effective_at, data,
        recorded_by, updated_by)
      values (${org.id}, ${patient}, 'VITAL_SIGNS', 'FINAL', '2023-05-01T10:00:00Z',
        ${JSON.stringify({ status: 'FINAL', weightKg: 70, painScore: null })}::jsonb, ${nurse.id}, ${nurse.id})`.execute(
      app.db,
    )
    const panels = await rowsOf(org.id)

    await up(app.db)
    const after = await rowsOf(org.id)
    const [first, second] = panels
    const members = after.filter((row) => row.kind === 'VITAL_SIGN')
    expect(members.map(({ code, status, data, patient_id }) => ({ code, status, data, patient_id }))).toEqual(
      [
        {
          code: '85354-9',
          status: 'FINAL',
          data: { panelId: first?.id, systolic: 120, diastolic: 80 },
          patient_id: patient,
        },
        { code: '8867-4', status: 'FINAL', data: { panelId: first?.id, heartRate: 62 }, patient_id: patient },
        {
          code: '29463-7',
          status: 'FINAL',
          data: { panelId: second?.id, weightKg: 70 },
          patient_id: patient,
        },
      ],
    )
    expect(members.map((member) => member.effective_at)).toEqual([
      first?.effective_at,
      first?.effective_at,
      second?.effective_at,
    ])
    for (const panel of panels) {
      const migrated = after.find((row) => row.id === panel.id)
      expect(migrated).toMatchObject({
        version: panel.version,
        updated_at: panel.updated_at,
        data: panel.data,
      })
      expect(Object.values(migrated?.member_ids ?? {}).sort((a, b) => a - b)).toEqual(
        members.filter((member) => member.data.panelId === panel.id).map((member) => member.id),
      )
    }
    expect(await historyCount(org.id)).toBe(historyBefore)

    // From now on, the database keeps them with their panel.
    await sql`update clinical_records set data = data || '{"weightKg": 71}', status = 'AMENDED'
      where id = ${second?.id}`.execute(app.db)
    const weight = (await rowsOf(org.id)).find((row) => row.code === '29463-7')
    expect(weight).toMatchObject({
      status: 'AMENDED',
      version: 2,
      data: { panelId: second?.id, weightKg: 71 },
    })
  })
})
