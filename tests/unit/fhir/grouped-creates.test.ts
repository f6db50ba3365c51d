import { describe, expect, it } from 'vitest'
import type { Trx } from '../../../db/database.js'
import { gatheredWrite } from '../../../src/lib/gathered-writes.js'
import { groupedCreates } from '../../../src/modules/fhir/grouped-creates.js'

// How a transaction's entries share statements: consecutive creates of one type wait at their
// writes and are written in one call; anything that may read what they write comes after it, and
// the failure answered is the one the first failing entry would have met written alone. Written
// here by a function that records its calls; the API's tests write real records
// (tests/api/fhir/transaction-creates.test.ts).

interface Entry {
  method: string
  type: { type: string }
  fullUrl?: string
  resource?: unknown
  ifNoneExist?: unknown
}

/** A transaction's handle and a write through it that records each call's items. */
function transaction({ failing = false } = {}) {
  const trx = {} as Trx
  const calls: string[][] = []
  const write = gatheredWrite(async (_handle: Trx, items: readonly string[]) => {
    calls.push([...items])
    if (failing) throw new Error('statement failed')
    // An item named `none` writes nothing (as a record of no live patient).
    return items.map((item) => (item === 'none' ? undefined : `${item}!`))
  })
  return { trx, calls, write }
}

const create = (type: string, more: Partial<Entry> = {}): Entry => ({
  method: 'POST',
  type: { type },
  ...more,
})

/** Runs entries in order as a transaction Bundle does; what each wrote, or the first failure. */
async function run(
  { trx, write }: ReturnType<typeof transaction>,
  entries: [Entry, string | Error][],
  log: string[] = [],
) {
  const group = groupedCreates(trx)
  try {
    for (const [entry, item] of entries) {
      await group.run(entry, async () => {
        if (item instanceof Error) throw item
        const written = await write(trx, item)
        if (written === undefined) throw new Error(`${item} not written`)
        log.push(written)
      })
    }
    await group.write()
    return log
  } finally {
    group.close()
  }
}

describe('grouped creates', () => {
  it('writes consecutive creates of one type in one call, each going on with its own result', async () => {
    const db = transaction()
    const written = await run(db, [
      [create('Observation'), 'a'],
      [create('Observation'), 'b'],
      [create('Observation'), 'c'],
    ])
    expect(db.calls).toEqual([['a', 'b', 'c']])
    expect(written).toEqual(['a!', 'b!', 'c!'])
  })

  it('writes the group before an entry that may read what it writes', async () => {
    for (const next of [
      create('Condition'),
      { method: 'PUT', type: { type: 'Observation' } },
      create('Observation', { ifNoneExist: { code: ['x'] } }),
      create('Observation', { resource: { subject: { reference: 'Patient?identifier=x' } } }),
      create('Observation', { resource: { derivedFrom: [{ reference: 'urn:uuid:a' }] } }),
    ]) {
      const db = transaction()
      await run(db, [
        [create('Observation', { fullUrl: 'urn:uuid:a' }), 'a'],
        [create('Observation', { resource: { subject: { reference: 'urn:uuid:elsewhere' } } }), 'b'],
        [next, 'c'],
      ])
      expect(db.calls, JSON.stringify(next)).toEqual([['a', 'b'], ['c']])
    }
  })

  it('answers the failure of the first entry that fails, in order, whether at its write or before', async () => {
    const before = transaction()
    await expect(
      run(before, [
        [create('Observation'), 'a'],
        [create('Observation'), 'none'],
        [create('Observation'), new Error('invalid')],
      ]),
    ).rejects.toThrow('none not written')
    expect(before.calls).toEqual([['a', 'none']])

    const after = transaction()
    const log: string[] = []
    await expect(
      run(
        after,
        [
          [create('Observation'), 'a'],
          [create('Observation'), new Error('invalid')],
          [create('Observation'), 'none'],
        ],
        log,
      ),
    ).rejects.toThrow('invalid')
    // The creates before it were written, as they would have been alone; those after it never run.
    expect(after.calls).toEqual([['a']])
    expect(log).toEqual(['a!'])
  })

  it('answers an entry’s own failure when the statement of the group before it fails after it', async () => {
    // As when that failure aborted the transaction: every statement after it fails.
    const db = transaction({ failing: true })
    await expect(
      run(db, [
        [create('Observation'), 'a'],
        [create('Observation'), new Error('the database went away')],
      ]),
    ).rejects.toThrow('the database went away')
    const alone = transaction({ failing: true })
    await expect(run(alone, [[create('Observation'), 'a']])).rejects.toThrow('statement failed')
  })

  it('lets each entry of a failing group end before it answers (none goes on past its transaction)', async () => {
    const db = transaction()
    const group = groupedCreates(db.trx)
    const ended: string[] = []
    for (const entry of ['first', 'second']) {
      await group.run(create('Observation'), async () => {
        await db.write(db.trx, 'none')
        // A failure that reads the database first (whose patient it was).
        await new Promise((resolve) => setImmediate(resolve))
        ended.push(entry)
        throw new Error(`${entry} not written`)
      })
    }
    await expect(group.write()).rejects.toThrow('first not written')
    expect(ended).toEqual(['first', 'second'])
  })

  it('makes a write that comes once its group is written alone', async () => {
    const db = transaction()
    const group = groupedCreates(db.trx)
    const written: (string | undefined)[] = []
    await group.run(create('Observation'), async () => {
      written.push(await db.write(db.trx, 'a'))
      written.push(await db.write(db.trx, 'a again'))
    })
    await group.run(create('Observation'), async () => {
      written.push(await db.write(db.trx, 'b'))
    })
    await group.write()
    expect(db.calls).toEqual([['a', 'b'], ['a again']])
    expect(written.sort()).toEqual(['a again!', 'a!', 'b!'])
  })

  it('writes alone where no group gathers', async () => {
    const db = transaction()
    expect(await db.write(db.trx, 'a')).toBe('a!')
    expect(db.calls).toEqual([['a']])
  })
})
