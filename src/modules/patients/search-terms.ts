/** What a patient search looks for: words that begin name words, and text found anywhere. */
export interface SearchTerms {
  /** Distinct, none the beginning of another (so each needs a name word of its own), longest first. */
  nameWords: string[]
  /** Terms with a digit, `@` or `.`: looked up anywhere in the MRN, e-mail, phone digits and name. */
  texts: string[]
}

const MAX_TERMS = 8

// The separators of name words, as in the database's patient_name_words(): ASCII other than
// letters and digits. Letters outside ASCII (ł, é, ß…) stay inside words.
const NAME_WORD_SEPARATORS = /[^0-9a-z\u{80}-\u{10ffff}]+/u
const PHONE_LIKE = /^[+\d().-]+$/
const DATE_LIKE = /^\d{4}-\d{2}/

/** The terms of a search query: whitespace-separated, case-insensitive, at most eight. */
export function parseSearchTerms(q: string): SearchTerms {
  const nameWords: string[] = []
  const texts: string[] = []
  for (const term of q.trim().toLowerCase().split(/\s+/).slice(0, MAX_TERMS)) {
    if (/[\d@.]/.test(term)) {
      texts.push(
        PHONE_LIKE.test(term) && /\d/.test(term) && !DATE_LIKE.test(term) ? term.replace(/\D/g, '') : term,
      )
    } else {
      nameWords.push(...term.split(NAME_WORD_SEPARATORS).filter((word) => word.length > 0))
    }
  }
  return {
    nameWords: significantWords(nameWords).slice(0, MAX_TERMS),
    texts: texts.filter((t) => t.length > 0),
  }
}

/** Drops words that another word begins with: the name word matching the longer matches both. */
function significantWords(words: string[]): string[] {
  const distinct = [...new Set(words)].sort((a, b) => b.length - a.length || (a < b ? -1 : 1))
  return distinct.filter((word, index) => !distinct.slice(0, index).some((longer) => longer.startsWith(word)))
}
