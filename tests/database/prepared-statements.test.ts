import { describe, expect, it } from 'vitest'
import { allowPreparing, statementNamer } from '../../db/prepared-statements.js'

describe('statementNamer', () => {
  it('names each distinct change once, whatever its case or leading space, also inside a WITH', () => {
    const nameOf = statementNamer(10)
    const texts = [
      'insert into t values ($1)',
      '  UPDATE t set a = 1',
      'delete from t',
      'with changed as (insert into t values ($1) returning "id") select * from changed',
      'with\n  changed as (\n  update t set a = 2 returning "id", "a") select * from changed',
      '/* all organizations: audit batches */\n  insert into t select * from unnest($1::int[])',
    ]
    const names = texts.map(nameOf)
    expect(
      names.every((name) => /^ehr_\d+$/.test(name ?? '')),
      String(names),
    ).toBe(true)
    expect(new Set(names).size).toBe(texts.length)
    expect(texts.map(nameOf)).toEqual(names)
  })

  it('names a read only when its code allowed it, since a reused plan may not suit every value', () => {
    const nameOf = statementNamer(10)
    const read = 'select * from prepared_test where id = $1'
    expect(nameOf(read)).toBeUndefined()
    expect(nameOf('with x as (select 1) select * from x')).toBeUndefined()
    expect(nameOf('/* all organizations: owner probe */ select * from t')).toBeUndefined()
    allowPreparing(read)
    expect(nameOf(read)).toMatch(/^ehr_\d+$/)
  })

  it('leaves a change returning every column unnamed, since a new column would change its result', () => {
    const nameOf = statementNamer(10)
    expect(nameOf('insert into t values ($1) returning *')).toBeUndefined()
    expect(nameOf('with changed as (update t set a = $1 returning *) select * from changed')).toBeUndefined()
    expect(nameOf('insert into t values ($1) returning "id", "a"')).toMatch(/^ehr_\d+$/)
  })

  it('leaves schema changes and transaction control unnamed', () => {
    const nameOf = statementNamer(10)
    for (const text of ['begin', 'commit', 'create table t (a int)', 'alter table t add b int', 'inserts'])
      expect(nameOf(text), text).toBeUndefined()
  })

  it('stops naming new texts at the limit, and never gives a name to a second text', () => {
    const nameOf = statementNamer(2)
    const first = nameOf('delete from t where a = 1')
    const second = nameOf('delete from t where a = 2')
    expect(nameOf('delete from t where a = 3')).toBeUndefined()
    expect([nameOf('delete from t where a = 1'), nameOf('delete from t where a = 2')]).toEqual([
      first,
      second,
    ])
    expect(first).not.toBe(second)
  })
})
