import {
  Kind,
  OptionalKind,
  type SchemaOptions,
  type Static,
  type TObject,
  type TProperties,
  type TSchema,
  Type,
  TypeRegistry,
} from '@sinclair/typebox'

/**
 * Names a schema for the API description: it appears once under `components.schemas` with this
 * PascalCase name and every use refers to it. Validation and serialization read the schema as
 * before; the name is only a title.
 */
export const Named = <T extends TSchema>(title: string, schema: T): T => ({ ...schema, title })

/**
 * One of a fixed list of strings, as JSON Schema's `enum`: one keyword for validation, the document
 * and generated clients (a union of literals would be an `anyOf` of one-value alternatives).
 */
export const StringEnum = <const T extends readonly string[]>(values: T, options: SchemaOptions = {}) =>
  Type.Unsafe<T[number]>({ [Kind]: STRING_ENUM, ...options, type: 'string', enum: [...values] })

const STRING_ENUM = 'StringEnum'
// TypeBox's own value checks (Value.Check, Value.Convert) learn the kind once.
if (!TypeRegistry.Has(STRING_ENUM))
  TypeRegistry.Set<{ enum: string[] }>(STRING_ENUM, (schema, value) => schema.enum.includes(value as string))

/** `T` or null: how a response says "no value" (fields are always present, never silently absent). */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const Id = Named(
  'Id',
  Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'Numeric identifier' }),
)

export const IdParams = Type.Object({ id: Id }, { additionalProperties: false })
export type IdParams = Static<typeof IdParams>

/** Calendar date, YYYY-MM-DD; impossible dates such as 2023-02-30 are rejected. */
export const DateString = Named('Date', Type.String({ format: 'date', examples: ['1984-07-12'] }))

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

export const Timestamp = Named(
  'Timestamp',
  Type.String({ format: 'date-time', description: 'ISO 8601 UTC date-time' }),
)

/** Free text that must carry at least one visible character. */
export const Text = (maxLength: number, options: { description?: string; examples?: string[] } = {}) =>
  Type.String({ minLength: 1, maxLength, pattern: '\\S', ...options })

export const Email = Named(
  'Email',
  Type.String({ format: 'email', maxLength: 254, examples: ['jane.doe@example.com'] }),
)

export const PhoneNumber = Named(
  'PhoneNumber',
  Type.String({
    pattern: '^\\+?[0-9][0-9 ().-]{5,23}$',
    description: 'Telephone number: digits with optional leading +, spaces, dots, dashes and parentheses',
    examples: ['+1 555 010 4477'],
  }),
)

/** A postal address as written: every part optional. */
export const AddressInput = Type.Object(
  {
    street: Type.Optional(Nullable(Text(200))),
    city: Type.Optional(Nullable(Text(100))),
    state: Type.Optional(Nullable(Text(100))),
    postalCode: Type.Optional(Nullable(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9 -]{1,11}$' }))),
    country: Type.Optional(
      Nullable(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2 code' })),
    ),
  },
  { additionalProperties: false },
)

/** A postal address as stored: a part not recorded is null. */
export const AddressData = Type.Object({
  street: Nullable(Type.String()),
  city: Nullable(Type.String()),
  state: Nullable(Type.String()),
  postalCode: Nullable(Type.String()),
  country: Nullable(Type.String()),
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
      details: Type.String({
        description:
          'What exactly was wrong, e.g. which field. A schema validation failure names every problem, joined with "; " (at most 20, then "… and N more")',
      }),
      fields: Type.Optional(
        Type.Array(
          Type.Object({
            path: Type.String({
              description:
                'Dotted path of the field, e.g. `identification.gender` or `items.0.code`; empty for the body or parameters as a whole',
            }),
            message: Type.String({
              description: 'The problem, without the path, e.g. `must be one of A, B`',
            }),
          }),
          {
            maxItems: 20,
            description:
              'Every 422 (VAL_001, VAL_002): the fields at fault, one entry each. For a schema validation failure, the problems of `details` in the same order; for a rule the schema cannot state (a check digit, one value against another, a refused address), the fields the rule concerns; for a duplicate (RES_002), the field holding the value already used. The code is VAL_002 when any problem is a missing required field, VAL_001 otherwise',
          },
        ),
      ),
    }),
  },
  {
    description:
      'Error envelope; every 422 also lists the fields at fault in `error.fields` (VAL_002 when any of them is a missing required field, else VAL_001)',
  },
)
export type ErrorEnvelope = Static<typeof ErrorEnvelope>

export const PAGE_SIZE_DEFAULT = 20
export const PAGE_SIZE_MAX = 100

/** A record's version: 1 when created, raised by one on every change; its ETag is `W/"<version>"`. */
export const Version = Named(
  'Version',
  Type.Integer({
    minimum: 1,
    description: 'Raised by one on every change of the record; the ETag of the record is W/"<version>"',
  }),
)

/** The `data` of a removal: the id of the record removed. */
export const Deleted = Named('Deleted', Type.Object({ id: Id }, { description: 'The record removed' }))

/** The `data` of a call that has nothing to return. */
export const Empty = Named('Empty', Type.Object({}, { description: 'Nothing: the call succeeded' }))

/** What a sync reader sees of a record removed since it last read. */
export const Tombstone = Named(
  'Tombstone',
  Type.Object(
    {
      id: Id,
      deleted: Type.Literal(true),
      deletedAt: Timestamp,
    },
    { description: 'A record removed since the position read from' },
  ),
)
export type Tombstone = Static<typeof Tombstone>

const SYNC_PAGE_NOTE =
  'Offset pages (`page`, `size`, `sort`) carry every field. Sync pages (`updatedSince` or `cursor`) are ordered by (updatedAt, id), carry `nextCursor` and leave out `totalElements` and `totalPages`, which would cost a count of the whole list on every call; lists of records that can be removed add `deleted`, the tombstones of the records removed within the same stretch of the walk.'

/**
 * The spec's Page, the `data` of every list endpoint. Lists of records that can be removed declare
 * `tombstones`: their sync pages list the records removed in `deleted`. A removed record never
 * comes back, so applying `content` and then `deleted` is always right.
 */
export const Page = <T extends TSchema>(item: T, options: { tombstones?: boolean; title?: string } = {}) => {
  const properties = {
    content: Type.Array(item),
    pageable: Type.Object({
      pageNumber: Type.Integer({ minimum: 0, description: '0-indexed page number (0 on sync pages)' }),
      pageSize: Type.Integer({ minimum: 1, maximum: PAGE_SIZE_MAX }),
    }),
    totalElements: Type.Optional(Type.Integer({ minimum: 0, description: 'Offset pages only' })),
    totalPages: Type.Optional(Type.Integer({ minimum: 0, description: 'Offset pages only' })),
    first: Type.Boolean(),
    last: Type.Boolean({ description: 'On a sync page: nothing more has changed for now' }),
    deleted: Type.Optional(
      Type.Array(Tombstone, {
        description:
          'Sync pages only, when records were removed: apply after `content` (absent when there are none)',
      }),
    ),
    nextCursor: Type.Optional(
      Type.String({
        description:
          'Sync pages only: pass as `cursor` (with the same filters) to read on; present on the last page too, to resume from later',
      }),
    ),
  }
  // Only lists of records that can be removed show tombstones.
  if (!options.tombstones) delete (properties as Partial<typeof properties>).deleted
  return Type.Object(properties, {
    description: SYNC_PAGE_NOTE,
    ...(options.title ? { title: options.title } : {}),
  })
}

/** The Page of a list endpoint holding records of type T. */
export type PageOf<T> = Omit<Static<ReturnType<typeof Page<TSchema>>>, 'content'> & { content: T[] }

/** The query parameters of sync reading, which every list accepts. */
const SYNC_PARAMETERS = {
  // No example value: tools that fill in examples (Swagger UI's "Try it out") would send it along
  // with the `sort` example, a combination sync pages refuse.
  updatedSince: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'Sync: records changed at or after this RFC 3339 time (e.g. `2026-01-01T00:00:00Z`), oldest change first, ordered by (updatedAt, id); removed records appear as tombstones. Not with `page` or `sort`.',
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
      description:
        'Sync: the `nextCursor` of the previous sync page, sent with the same filters. Opaque and signed; keyset paging, so a deep page costs what the first does.',
    }),
  ),
}

/** The offset paging parameters of a list: `page`, `size` and `sort` over the given sortable fields. */
const pageParameters = (sortable: readonly [string, ...string[]]) => ({
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
})

/**
 * Query string of a list endpoint: `page`, `size`, `sort` over the given sortable fields, plus the
 * resource's filters. Unknown parameters and sort fields are rejected (400), not ignored.
 */
export const ListQuery = <F extends TProperties>(
  sortable: readonly [string, ...string[]],
  filters: F,
  options: { sync?: boolean } = {},
) =>
  Type.Object(
    {
      ...pageParameters(sortable),
      ...(options.sync === false ? {} : SYNC_PARAMETERS),
      ...filters,
    },
    { additionalProperties: false },
  )

/** The paging part of a list query (offset pages and sync reading); the rest of it are the list's filters. */
export type ListPaging = Static<TObject<ReturnType<typeof pageParameters> & typeof SYNC_PARAMETERS>>

/** The names of the paging parameters, which a list query holds besides its filters. */
export const LIST_PAGING_PARAMETERS = Object.keys({
  ...pageParameters(['']),
  ...SYNC_PARAMETERS,
}) as readonly (keyof ListPaging)[]

/** What an offset page is read with. */
export type PageQuery = Pick<ListPaging, 'page' | 'size' | 'sort'>

/** The request headers of a conditional write: `If-Match` with the version the client last read. */
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({
      pattern: '^(\\*|(W/)?"[1-9][0-9]{0,9}")$',
      description:
        'The ETag the client read (`W/"<version>"`), or `*`: the change is made only if the record is still at that version, otherwise 412 RES_003 with the current version',
    }),
  ),
})

/** The request headers of a conditional read: `If-None-Match` with versions the client holds. */
export const IfNoneMatchHeaders = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({
      maxLength: 1024,
      description: 'ETags the client holds, comma-separated, or `*`: 304 without a body when one is current',
    }),
  ),
})

type SchemaNode = TSchema & {
  properties?: TProperties
  anyOf?: SchemaNode[]
  type?: string
  default?: unknown
}

/** The schema without its `default`: a member a patch leaves out must stay as it is, not be filled in. */
function withoutDefault(schema: SchemaNode): SchemaNode {
  const {
    default: _ignored,
    [OptionalKind]: _optional,
    ...rest
  } = schema as SchemaNode & {
    [OptionalKind]?: unknown
  }
  return rest as SchemaNode
}

function patchOfMember(schema: SchemaNode, optional: boolean): TSchema {
  let patched: SchemaNode
  if (schema.properties) patched = MergePatch(schema as unknown as TObject) as SchemaNode
  else if (schema.anyOf?.some((option) => option.properties))
    patched = Type.Union(
      schema.anyOf.map((option) => (option.properties ? MergePatch(option as unknown as TObject) : option)),
    ) as SchemaNode
  else patched = withoutDefault(schema)
  const takesNull = patched.type === 'null' || patched.anyOf?.some((option) => option.type === 'null')
  return optional && !takesNull ? Nullable(patched) : patched
}

/**
 * The body of a JSON Merge Patch (RFC 7396) of a record written with `body`: every member may be
 * left out; an optional one may be null, which removes it; a nested object is a patch itself; an
 * array replaces the record's whole. Members `body` does not declare (read-only ones such as `id`
 * or `version`) are refused. The merged record is then checked against `body` itself.
 */
export function MergePatch(
  body: TObject,
  options: { description?: string; examples?: unknown[]; title?: string } = {},
): TObject {
  const required = new Set(body.required ?? [])
  const properties = Object.fromEntries(
    Object.entries(body.properties).map(([name, member]) => [
      name,
      Type.Optional(patchOfMember(member as SchemaNode, !required.has(name))),
    ]),
  )
  return Type.Object(properties, { additionalProperties: false, examples: patchExamples(body), ...options })
}

/** Without examples of its own, a patch's example is the first member of the body's first example. */
function patchExamples(body: TObject): unknown[] | undefined {
  const [example] = (body.examples ?? []) as Record<string, unknown>[]
  const [member] = Object.entries(example ?? {})
  return member ? [Object.fromEntries([member])] : undefined
}
