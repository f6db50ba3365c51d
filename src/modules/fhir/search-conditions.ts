import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely'
import { parseDate, parseToken } from './search-params.js'

/**
 * The object without its undefined members, or undefined when none is left: FHIR forbids empty
 * objects and arrays, so absent parts are left out rather than sent empty.
 */
export function present<T extends object>(value: T): T | undefined {
  const entries = Object.entries(value).filter(([, member]) => member !== undefined)
  return entries.length > 0 ? (Object.fromEntries(entries) as T) : undefined
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** A FHIR string search: the value starts the text, case-insensitively. */
export function stringCondition(
  // biome-ignore lint/suspicious/noExplicitAny: any table set
  eb: ExpressionBuilder<any, any>,
  lowered: Expression<string | null>,
  value: string,
): Expression<SqlBool> {
  return eb(lowered, 'like', `${escapeLike(value.toLowerCase())}%`)
}

/**
 * A FHIR date search on a column: `date` columns compare calendar dates, `instant` columns
 * (timestamptz) compare instants; the value's precision decides the range it stands for.
 */
export function dateCondition(
  // biome-ignore lint/suspicious/noExplicitAny: any table set
  eb: ExpressionBuilder<any, any>,
  column: string,
  value: string,
  kind: 'date' | 'instant',
): Expression<SqlBool> {
  const range = parseDate(value)
  const [start, end] = kind === 'date' ? [range.startDate, range.endDate] : [range.start, range.end]
  const ref = eb.ref(column)
  const cast = (text: string) => (kind === 'date' ? sql`${text}::date` : sql`${text}::timestamptz`)
  switch (range.comparator) {
    case 'gt':
      return eb(ref, '>=', cast(end))
    case 'ge':
      return eb(ref, '>=', cast(start))
    case 'lt':
      return eb(ref, '<', cast(start))
    case 'le':
      return eb(ref, '<', cast(end))
    case 'ne':
      return eb.or([eb(ref, '<', cast(start)), eb(ref, '>=', cast(end))])
    default:
      return eb.and([eb(ref, '>=', cast(start)), eb(ref, '<', cast(end))])
  }
}

/** The codes of token values that can match identifiers of `system` (any system, or that one). */
export function tokenValues(values: string[], system: string): string[] {
  return values
    .map(parseToken)
    .filter((token) => token.code !== undefined && (token.system === undefined || token.system === system))
    .map((token) => token.code as string)
}
