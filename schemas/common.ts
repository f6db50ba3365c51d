import { type Static, type TProperties, type TSchema, Type } from '@sinclair/typebox'

/** `T` or null: how a response says "no value" (fields are always present, never silently absent). */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const Id = Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Numeric identifier' })

export const IdParams = Type.Object({ id: Id }, { additionalProperties: false })
export type IdParams = Static<typeof IdParams>

/** Calendar date, YYYY-MM-DD; impossible dates such as 2023-02-30 are rejected. */
export const DateString = Type.String({ format: 'date', examples: ['1984-07-12'] })

/** Wall-clock time of day in whole minutes, HH:MM:SS. */
export const TimeOfDay = (options: { description?: string } = {}) =>
  Type.String({
    pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]:00$',
    description: 'HH:MM:SS, whole minutes',
    examples: ['09:30:00'],
    ...options,
  })

/** The end of a wall-clock interval: a time of day, or 24:00:00 for the end of the day. */
export const EndTimeOfDay = Type.String({
  pattern: '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00):00$',
  description: 'HH:MM:SS, whole minutes; 24:00:00 is the end of the day',
  examples: ['17:00:00'],
})

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC date-time' })

/** Free text that must carry at least one visible character. */
export const Text = (maxLength: number, options: { description?: string; examples?: string[] } = {}) =>
  Type.String({ minLength: 1, maxLength, pattern: '\\S', ...options })

export const Email = Type.String({ format: 'email', maxLength: 254, examples: ['jane.doe@example.com'] })

export const PhoneNumber = Type.String({
  pattern: '^\\+?[0-9][0-9 ().-]{5,23}$',
  description: 'Telephone number: digits with optional leading +, spaces, dots, dashes and parentheses',
  examples: ['+1 555 010 4477'],
})

/** The spec's response envelope for a successful call. */
export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({
    success: Type.Literal(true),
    message: Type.String(),
    data,
  })

export const ErrorEnvelope = Type.Object(
  {
    success: Type.Literal(false),
    message: Type.String({ description: 'Human-readable summary' }),
    error: Type.Object({
      code: Type.String({ description: 'Stable error code; see the error table in the API description' }),
      details: Type.String({ description: 'What exactly was wrong, e.g. which field' }),
    }),
  },
  { description: 'Error envelope' },
)
export type ErrorEnvelope = Static<typeof ErrorEnvelope>

export const PAGE_SIZE_DEFAULT = 20
export const PAGE_SIZE_MAX = 100

/** The spec's Page, the `data` of every list endpoint. */
export const Page = <T extends TSchema>(item: T) =>
  Type.Object({
    content: Type.Array(item),
    pageable: Type.Object({
      pageNumber: Type.Integer({ minimum: 0, description: '0-indexed page number' }),
      pageSize: Type.Integer({ minimum: 1, maximum: PAGE_SIZE_MAX }),
    }),
    totalElements: Type.Integer({ minimum: 0 }),
    totalPages: Type.Integer({ minimum: 0 }),
    first: Type.Boolean(),
    last: Type.Boolean(),
  })

/** The Page of a list endpoint holding records of type T. */
export type PageOf<T> = Omit<Static<ReturnType<typeof Page<TSchema>>>, 'content'> & { content: T[] }

/**
 * Query string of a list endpoint: `page`, `size`, `sort` over the given sortable fields, plus the
 * resource's filters. Unknown parameters and sort fields are rejected (400), not ignored.
 */
export const ListQuery = <F extends TProperties>(sortable: readonly [string, ...string[]], filters: F) =>
  Type.Object(
    {
      page: Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        default: 0,
        description:
          '0-indexed page number. Pages are read by offset, so a deep page costs more than an early one (the rows before it are skipped on every call); to walk a large list, narrow it with filters rather than paging far.',
      }),
      size: Type.Integer({
        minimum: 1,
        maximum: PAGE_SIZE_MAX,
        default: PAGE_SIZE_DEFAULT,
        description: `Page size, default ${PAGE_SIZE_DEFAULT}, at most ${PAGE_SIZE_MAX} (a larger value is a 400, never clamped)`,
      }),
      sort: Type.Optional(
        Type.String({
          pattern: `^(${sortable.join('|')})(,(asc|desc))?$`,
          description: `\`field,asc|desc\` (direction defaults to asc). Sortable fields: ${sortable.join(', ')}`,
          examples: [`${sortable[0]},asc`],
        }),
      ),
      ...filters,
    },
    { additionalProperties: false },
  )

export type PageQuery = { page: number; size: number; sort?: string }
