import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { type TSchema, Type } from '@sinclair/typebox'
import type { Db } from '../../db/database.js'
import { Envelope, Id, ListQuery, Page, Version } from '../../schemas/common.js'
import { notFound } from '../errors.js'
import type { Principal } from '../identity/principal.js'
import { sortOrder, toPage } from '../lib/paging.js'
import {
  type RecordVersion,
  recordVersion,
  recordVersions,
  type VersionedTable,
} from '../lib/record-history.js'
import { ok } from './envelope.js'
import { principalOf } from './request-principal.js'

type App = Parameters<FastifyPluginAsyncTypebox>[0]

/** What the version routes of one kind of versioned record need to know of it. */
interface VersionedRecord<T extends VersionedTable> {
  table: T
  tags: string[]
  /** The record in operation ids: `Patient` gives getPatientVersion. */
  name: string
  /** The record in summaries and messages: `patient`. */
  noun: string
  /** The collection's path; one record is at `<path>/:id`. */
  path?: string
  /** The record as the API shows it (the schema of its read's `data`). */
  schema: TSchema
  /** The 403 and 404 answers of the record's read. */
  errors: Record<number, TSchema>
  /** The record's own read: refuses the call as it would (403, 404). */
  read(db: Db, actor: Principal, id: number): Promise<unknown>
  /** A version as the API shows the record, as `schema` describes it (with what it held then). */
  represent(version: RecordVersion<T>, db: Db): unknown
}

/** The query of a record's versions: offset pages, newest first unless `sort=version,asc`. */
const VersionsQuery = ListQuery(['version'], {}, { sync: false })
const VersionParams = Type.Object({ id: Id, version: Version }, { additionalProperties: false })

const VERSIONS_NOTE =
  'Every change keeps the version it replaces, in the transaction of the change; a write that changes nothing makes none. Versions replaced before the service kept them are not there: not listed, 404 when asked for.'

/**
 * `GET <path>/:id/versions` (every version of a record, newest first) and `GET
 * <path>/:id/versions/:version` (one of them). They answer only a caller who may read the record
 * now (its read decides), and are audited as reads of it (the access table gives them its rule).
 */
export function versionRoutes<T extends VersionedTable>(app: App, record: VersionedRecord<T>): void {
  const { table, tags, name, noun, path = '', schema, errors } = record
  const retrieved = `${noun.charAt(0).toUpperCase()}${noun.slice(1)} version`

  app.get(
    `${path}/:id/versions`,
    {
      schema: {
        tags,
        operationId: `list${name}Versions`,
        summary: `Every version of a ${noun}, newest first`,
        description: `The ${noun} as it was at each version, newest first (\`sort=version,asc\`: oldest first). ${VERSIONS_NOTE}`,
        params: Type.Object({ id: Id }, { additionalProperties: false }),
        querystring: VersionsQuery,
        response: { 200: Envelope(Page(schema, { title: `${name}VersionPage` })), ...errors },
      },
    },
    async (request) => {
      const { query } = request
      const actor = principalOf(request)
      await record.read(app.db, actor, request.params.id)
      const { direction } = sortOrder(
        query.sort,
        { version: 'version' },
        { field: 'version', direction: 'desc' },
      )
      const { rows, total } = await recordVersions(
        app.db,
        actor.organizationId,
        table,
        request.params.id,
        query,
        { direction },
      )
      return ok(
        `${retrieved}s retrieved`,
        toPage(await Promise.all(rows.map((row) => record.represent(row, app.db))), total, query),
      )
    },
  )

  app.get(
    `${path}/:id/versions/:version`,
    {
      schema: {
        tags,
        operationId: `get${name}Version`,
        summary: `One version of a ${noun}`,
        description: `The ${noun} as it was at that version, the current one too. ${VERSIONS_NOTE}`,
        params: VersionParams,
        response: { 200: Envelope(schema), ...errors },
      },
    },
    async (request) => {
      const { id, version } = request.params
      const actor = principalOf(request)
      await record.read(app.db, actor, id)
      const kept = await recordVersion(app.db, actor.organizationId, table, id, version)
      if (!kept) throw notFound(`Version ${version} of ${noun} ${id}`)
      return ok(`${retrieved} retrieved`, await record.represent(kept, app.db))
    },
  )
}
