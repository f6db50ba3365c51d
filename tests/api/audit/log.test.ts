import { randomUUID } from 'node:crypto'
import { CompiledQuery, sql } from 'kysely'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../../db/connect.js'
import { AUDIT_BATCH_SIZE, AuditLog } from '../../../src/audit/audit-log.js'
import { filteredAuditRows } from '../../../src/modules/audit/queries.js'
import { openTestDatabase } from '../../helpers/app.js'

let handle: DatabaseHandle

beforeAll(async () => {
  handle = await openTestDatabase()
})
afterAll(async () => {
  await handle.close()
})

const record = (requestId: string) => ({
  occurred_at: new Date(),
  organization_id: null,
  user_id: null,
  action: 'READ',
  resource_type: 'PATIENT',
  resource_ids: [1],
  patient_id: null,
  outcome: 'SUCCESS',
  status_code: 200,
  request_id: requestId,
})

const storedWith = async (prefix: string) =>
  (
    await handle.db
      .selectFrom('audit_log')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('request_id', 'like', `${prefix}%`)
      .executeTakeFirstOrThrow()
  ).count

/** How many inserts wrote the records: a statement's rows share their recorded_at (its transaction's start). */
const insertsWith = async (prefix: string) =>
  (
    await handle.db
      .selectFrom('audit_log')
      .select('recorded_at')
      .distinct()
      .where('request_id', 'like', `${prefix}%`)
      .execute()
  ).length

const newLog = () => new AuditLog(handle.db, { flushIntervalMs: 3_600_000, onFlushError: () => {} })

// Inserts of records whose request id starts with a prefix listed here fail, as when the database
// refuses the audit insert.
async function refuseRecordsOf(prefix: string, refuse: boolean): Promise<void> {
  if (refuse) await sql`insert into audit_refusals (prefix) values (${prefix})`.execute(handle.db)
  else await sql`delete from audit_refusals where prefix = ${prefix}`.execute(handle.db)
}

beforeAll(async () => {
  await sql`create table audit_refusals (prefix text primary key)`.execute(handle.db)
  await sql`create function refuse_audit() returns trigger language plpgsql as $$
    begin
      if exists (select 1 from audit_refusals where starts_with(new.request_id, prefix)) then
        raise exception 'audit refused';
      end if;
      return new;
    end $$`.execute(handle.db)
  await sql`create trigger refuse_audit before insert on audit_log for each row
    execute function refuse_audit()`.execute(handle.db)
})

describe('AuditLog', () => {
  it('resolves a write once its records are stored, and puts the writes made meanwhile in one insert', async () => {
    const log = newLog()
    const prefix = randomUUID()
    const first = log.write([record(`${prefix}-first`)])
    const rest = Array.from({ length: AUDIT_BATCH_SIZE }, (_, i) => log.write([record(`${prefix}-${i}`)]))
    await first
    expect(Number(await storedWith(`${prefix}-first`))).toBe(1)
    await Promise.all(rest)
    expect([log.flushed, log.buffered, Number(await storedWith(prefix))]).toEqual([
      AUDIT_BATCH_SIZE + 1,
      0,
      AUDIT_BATCH_SIZE + 1,
    ])
    // 101 writes, 2 inserts.
    expect(await insertsWith(prefix)).toBeLessThanOrEqual(2)
    expect(log.inserts).toBe(await insertsWith(prefix))
    await log.close()
  })

  it('holds an insert for the calls it expects, then writes them together', async () => {
    const log = newLog()
    const prefix = randomUUID()
    const ends = [log.expect(), log.expect()]
    const first = log.write([record(`${prefix}-first`)])
    ;(ends[0] as () => void)()
    const second = log.write([record(`${prefix}-second`)])
    ;(ends[1] as () => void)()
    ;(ends[1] as () => void)()
    await Promise.all([first, second])
    expect([await insertsWith(prefix), log.expecting, Number(await storedWith(prefix))]).toEqual([1, 0, 2])
    await log.close()
  })

  it('waits for an expected call only briefly, and not at all on flush', async () => {
    const log = newLog()
    const prefix = randomUUID()
    const end = log.expect()
    await log.write([record(`${prefix}-alone`)])
    expect(Number(await storedWith(prefix))).toBe(1)
    const held = log.write([record(`${prefix}-flushed`)])
    await log.flush()
    expect(Number(await storedWith(prefix))).toBe(2)
    await held
    end()
    expect(log.expecting).toBe(0)
    await log.close()
  })

  it('rejects a write whose insert fails, keeping only the records marked to keep for the next flush', async () => {
    const log = newLog()
    const prefix = randomUUID()
    await refuseRecordsOf(prefix, true)
    const acknowledged = log.write([record(`${prefix}-acknowledged`)])
    const failedCall = log.write([record(`${prefix}-failed-call`)], { keepOnFailure: true })
    await expect(acknowledged).rejects.toThrow()
    await expect(failedCall).rejects.toThrow()
    // The first write went alone, the second into the next insert: both inserts failed.
    expect([log.failed, log.buffered, Number(await storedWith(prefix))]).toEqual([2, 1, 0])
    await refuseRecordsOf(prefix, false)
    await log.flush()
    expect([log.buffered, Number(await storedWith(prefix))]).toEqual([0, 1])
    expect(Number(await storedWith(`${prefix}-failed-call`))).toBe(1)
    await log.close()
  })

  it('writes the kept records at close', async () => {
    const log = newLog()
    const prefix = randomUUID()
    await refuseRecordsOf(prefix, true)
    for (let i = 0; i < 3; i++)
      await log.write([record(`${prefix}-${i}`)], { keepOnFailure: true }).catch(() => {})
    expect(log.buffered).toBe(3)
    await refuseRecordsOf(prefix, false)
    await log.close()
    expect(Number(await storedWith(prefix))).toBe(3)
  })

  it('stores every column as recorded: several, one or no resource ids, and nulls beside values', async () => {
    const log = newLog()
    const prefix = randomUUID()
    const occurredAt = new Date('2026-03-04T05:06:07.089Z')
    const rows = [
      { ...record(`${prefix}-a`), occurred_at: occurredAt, resource_ids: [3, 1, 2147483647], user_id: 7 },
      { ...record(`${prefix}-b`), resource_ids: [], organization_id: 5, patient_id: 9, status_code: 404 },
      { ...record(`${prefix}-c`), action: 'SEARCH', resource_type: 'APPOINTMENT', outcome: 'DENIED' },
      // Text that an array literal must quote: separators, braces, quotes, backslashes, NULL, blanks.
      { ...record(`${prefix}-d "q" \\b, {x}`), action: 'NULL', resource_type: '', outcome: ' ' },
    ]
    await log.write(rows)
    await log.close()
    const stored = await handle.db
      .selectFrom('audit_log')
      .select([
        'occurred_at',
        'organization_id',
        'user_id',
        'action',
        'resource_type',
        'resource_ids',
        'patient_id',
        'outcome',
        'status_code',
        'request_id',
      ])
      .where('request_id', 'like', `${prefix}%`)
      .orderBy('request_id')
      .execute()
    expect(stored.map((row) => ({ ...row, occurred_at: new Date(row.occurred_at).toISOString() }))).toEqual(
      rows.map((row) => ({ ...row, occurred_at: row.occurred_at.toISOString() })),
    )
  })
})

describe('the audit log’s indexes', () => {
  it('find a patient’s records by an inverted index of patient records alone', async () => {
    const { rows } = await sql<{ definition: string }>`
      select indexdef as definition from pg_indexes
      where tablename = 'audit_log' and indexdef ilike '%using gin%'`.execute(handle.db)
    expect(rows.map((row) => row.definition)).toEqual([
      expect.stringMatching(/\(resource_ids\) WHERE \(resource_type = 'patient'::text\)$/),
    ])
    // With sequential scans priced out and the organization's other indexes set aside (a rolled back
    // transaction), the plan shows whether the filter can use the index: on tables this small the
    // planner would otherwise read them whatever indexes exist.
    let plan = ''
    await handle.db
      .transaction()
      .execute(async (trx) => {
        await sql`set local enable_seqscan = off`.execute(trx)
        await sql`drop index audit_log_org_time_idx, audit_log_org_user_time_idx, audit_log_sync_idx`.execute(
          trx,
        )
        const { sql: text, parameters } = filteredAuditRows(trx, 1, { patientId: 42 }).compile()
        const rows = await trx.executeQuery(CompiledQuery.raw(`explain ${text}`, [...parameters]))
        plan = rows.rows.map((row) => Object.values(row as object).join(' ')).join('\n')
        throw new Error('rolled back')
      })
      .catch(() => {})
    expect(plan).toContain('audit_log_patient_ids_idx')
    expect(plan).toContain('audit_log_org_patient_time_idx')
  })
})
