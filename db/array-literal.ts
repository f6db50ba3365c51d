const QUOTED_SPECIALS = /["\\]/g

/**
 * A PostgreSQL array literal (`{"a","b",NULL}`) of text values, each quoted, so that no value can
 * read as NULL, a separator or a nested array. Built with one join: pg builds the same literal
 * from a JavaScript array by concatenating element after element, which for a batch of a hundred
 * rows left thousands of intermediate strings behind.
 */
export function textArrayLiteral(values: readonly (string | null)[]): string {
  return `{${values.map(quotedElement).join(',')}}`
}

// A replace costs a regular expression's run even where nothing matches (more than pg's whole
// encoding: docs/performance-log.md): the plain search comes first, and the values written here
// seldom hold either character.
function quotedElement(value: string | null): string {
  if (value === null) return 'NULL'
  if (value.includes('"') || value.includes('\\')) return `"${value.replace(QUOTED_SPECIALS, '\\$&')}"`
  return `"${value}"`
}

/** A PostgreSQL array literal of integers (`{1,2,NULL}`). */
export function integerArrayLiteral(values: readonly (number | null)[]): string {
  for (const value of values) {
    if (value !== null && !Number.isSafeInteger(value)) throw new TypeError(`not an integer: ${value}`)
  }
  return `{${values.map((value) => value ?? 'NULL').join(',')}}`
}
