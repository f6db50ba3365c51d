import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DatabaseHandle } from '../../db/connect.js'
import { AUDIT_BATCH_SIZE, AuditLog } from '../../src/audit/audit-log.js'
import { openTestDatabase } from '../helpers/app.js'

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

describe('AuditLog', () => {
  it('writes full batches as they fill, and the rest only when flushed', async () => {
    // A timer that never fires within the test: only full batches may go out by themselves.
    const log = new AuditLog(handle.db, { flushIntervalMs: 3_600_000, onFlushError: () => {} })
    const prefix = randomUUID()
    const full = 2 * AUDIT_BATCH_SIZE
    const rest = Math.floor(AUDIT_BATCH_SIZE / 2)
    for (let i = 0; i < full + rest; i++) log.record(record(`${prefix}-${i}`))
    await expect.poll(() => log.flushed, { timeout: 10_000 }).toBe(full)
    // Give a draining writer the time it would take to send the remainder too.
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect([log.flushed, log.buffered, Number(await storedWith(prefix))]).toEqual([full, rest, full])
    await log.flush()
    expect([log.flushed, log.buffered, Number(await storedWith(prefix))]).toEqual([
      full + rest,
      0,
      full + rest,
    ])
    await log.close()
  })

  it('writes what is left at close', async () => {
    const log = new AuditLog(handle.db, { flushIntervalMs: 3_600_000, onFlushError: () => {} })
    const prefix = randomUUID()
    for (let i = 0; i < 3; i++) log.record(record(`${prefix}-${i}`))
    await log.close()
    expect(Number(await storedWith(prefix))).toBe(3)
  })

  it('stores every column as recorded: several, one or no resource ids, and nulls beside values', async () => {
    const log = new AuditLog(handle.db, { flushIntervalMs: 3_600_000, onFlushError: () => {} })
    const prefix = randomUUID()
    const occurredAt = new Date('2026-03-04T05:06:07.089Z')
    const rows = [
      { ...record(`${prefix}-a`), occurred_at: occurredAt, resource_ids: [3, 1, 2147483647], user_id: 7 },
      { ...record(`${prefix}-b`), resource_ids: [], organization_id: 5, patient_id: 9, status_code: 404 },
      { ...record(`${prefix}-c`), action: 'SEARCH', resource_type: 'APPOINTMENT', outcome: 'DENIED' },
      // Text that an array literal must quote: separators, braces, quotes, backslashes, NULL, blanks.
      { ...record(`${prefix}-d "q" \\b, {x}`), action: 'NULL', resource_type: '', outcome: ' ' },
    ]
    for (const row of rows) log.record(row)
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
