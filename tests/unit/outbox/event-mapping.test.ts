import { sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../../db/connect.js'
import type { App } from '../../../src/app.js'
import { patientEvent } from '../../../src/modules/patients/mapper.js'
import { column, eventMapping, isSet } from '../../../src/outbox/event-mapping.js'
import { buildTestApp } from '../../helpers/app.js'
import { createPatient, newOrganization } from '../../helpers/factories.js'

let app: App
let db: DatabaseHandle['db']

beforeAll(async () => {
  app = await buildTestApp()
  db = app.db
})
afterAll(async () => {
  await app.close()
})

describe('eventMapping', () => {
  it('builds the same data in SQL from the changed row as in code from the row', async () => {
    const user = await (await newOrganization(app)).user('PROVIDER')
    const id = await createPatient(app, user)
    for (const deleted of [false, true]) {
      if (deleted)
        await db.updateTable('patients').set({ deleted_at: new Date() }).where('id', '=', id).execute()
      const row = await db.selectFrom('patients').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
      const { rows } = await sql<{ data: unknown }>`
        select ${patientEvent.toSql(sql.table('changed'))} as data
        from (select * from patients where id = ${id}) as changed`.execute(db)
      expect(rows[0]?.data).toEqual(patientEvent.toData(row))
      expect(patientEvent.toData(row)).toEqual({
        id,
        mrn: row.mrn,
        status: 'ACTIVE',
        version: deleted ? 2 : 1,
        deleted,
      })
    }
  })

  it('names exactly the fields it was given, nothing of the row besides', () => {
    const mapping = eventMapping<
      'patient.created',
      {
        id: number
        mrn: string
        status: 'ACTIVE'
        version: number
        deleted_at: Date | null
        first_name: string
      }
    >({
      id: column('id'),
      mrn: column('mrn'),
      status: column('status'),
      version: column('version'),
      deleted: isSet('deleted_at'),
    })
    const data = mapping.toData({
      id: 1,
      mrn: 'M1',
      status: 'ACTIVE',
      version: 3,
      deleted_at: null,
      first_name: 'Ann',
    })
    expect(data).toEqual({ id: 1, mrn: 'M1', status: 'ACTIVE', version: 3, deleted: false })
  })
})
