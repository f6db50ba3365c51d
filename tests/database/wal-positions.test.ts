import { describe, expect, it } from 'vitest'
import { formatLsn, parseLsn } from '../../db/wal-positions.js'

describe('WAL positions (X-Write-Position, X-Read-After)', () => {
  it('reads PostgreSQL’s notation as bytes, orders by it and writes it back', () => {
    expect(parseLsn('0/3000148')).toBe(0x3000148n)
    expect(parseLsn('16/B374D848')).toBe((0x16n << 32n) + 0xb374d848n)
    expect((parseLsn('1/0') as bigint) > (parseLsn('0/FFFFFFFF') as bigint)).toBe(true)
    expect(formatLsn(parseLsn('16/B374D848') as bigint)).toBe('16/B374D848')
  })

  it('refuses anything else, so a bad header is ignored rather than trusted', () => {
    for (const text of ['', '0/', '/1', 'x/1', '1/2/3', '123456789/0', '0/1 ', '-1/0'])
      expect(parseLsn(text), text).toBeUndefined()
  })
})
