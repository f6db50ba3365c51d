import { describe, expect, it } from 'vitest'
import { prefixEnd } from '../../../src/lib/prefix-range.js'
import { parseSearchTerms } from '../../../src/modules/patients/search-terms.js'

describe('parseSearchTerms', () => {
  it('splits name words at ASCII punctuation, keeping letters outside ASCII inside words', () => {
    expect(parseSearchTerms("  O'Brien-ŁUKASZ   zoë ")).toEqual({
      nameWords: ['łukasz', 'brien', 'zoë', 'o'],
      texts: [],
    })
  })

  it('keeps terms with a digit, @ or . whole, reducing phone numbers to their digits', () => {
    expect(parseSearchTerms('+1 (617) 555-0199 ann@x.org st. 1980-04-04 zx-998')).toEqual({
      nameWords: [],
      texts: ['1', '617', '5550199', 'ann@x.org', 'st.', '1980-04-04', 'zx-998'],
    })
  })

  it('drops repeated words and words that begin another, longest first', () => {
    expect(parseSearchTerms('ann anna ANNA kowal kowalska a').nameWords).toEqual(['kowalska', 'anna'])
  })

  it('reads at most eight terms and leaves punctuation alone as nothing to find', () => {
    expect(parseSearchTerms('a1 b2 c3 d4 e5 f6 g7 h8 i9').texts).toHaveLength(8)
    expect(parseSearchTerms('% _ \\ -')).toEqual({ nameWords: [], texts: [] })
  })
})

describe('prefixEnd', () => {
  it('is the next string after every string that begins with the prefix', () => {
    expect(prefixEnd('kowal')).toBe('kowam')
    expect(prefixEnd('zo\u00eb')).toBe('zo\u00ec')
    expect(prefixEnd('a\u{10ffff}')).toBe('b')
    expect(prefixEnd('a\ud7ff')).toBe('a\ue000')
    expect(prefixEnd('\u{10ffff}')).toBeUndefined()
    expect(prefixEnd('')).toBeUndefined()
  })

  it('bounds a prefix range in code-point order', () => {
    const prefix = 'ann'
    const end = prefixEnd(prefix) as string
    for (const word of ['ann', 'anna', 'ann\u{10fffe}x', 'annz\u00ff'])
      expect(word >= prefix && word < end, word).toBe(true)
    for (const word of ['ano', 'anm', 'an']) expect(word >= prefix && word < end, word).toBe(false)
  })
})
