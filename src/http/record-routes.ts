import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static, TSchema } from '@sinclair/typebox'
import type { FastifyContextConfig } from 'fastify'
import type { Db } from '../../db/database.js'
import { IdParams, IfMatchHeaders, IfNoneMatchHeaders } from '../../schemas/common.js'
import type { Principal } from '../identity/principal.js'
import type { ExpectedVersion } from '../lib/versions.js'
import { ok } from './envelope.js'
import { validMergedBody } from './merge-patch-body.js'
import { principalOf } from './request-principal.js'

type App = Parameters<FastifyPluginAsyncTypebox>[0]

/** What the API description says of one operation. */
interface Operation {
  operationId: string
  summary: string
  description?: string
  consumes?: string[]
}

/** Answers of a route by status code. */
type Answers = Record<number, TSchema>

/** What an envelope schema holds in `data`. */
type DataOf<E extends TSchema> = Static<E> extends { data: infer T } ? T : never

// A service as the routes about the record at `:id` call it.
type Read<T> = (db: Db, actor: Principal, id: number) => Promise<T>
type Change<T> = (db: Db, actor: Principal, id: number, expected: ExpectedVersion) => Promise<T>
type ChangeWith<B, T> = (
  db: Db,
  actor: Principal,
  id: number,
  body: B,
  expected: ExpectedVersion,
) => Promise<T>
type Patch<P, B, T> = (
  db: Db,
  actor: Principal,
  id: number,
  patch: P,
  expected: ExpectedVersion,
  validate: (merged: unknown) => B,
) => Promise<T>

/** What a route that changes the record at `:id` answers. */
interface ChangeAnswers<A extends TSchema> {
  /** The success (200) when it is not the envelope of the record. */
  answer?: A
  /** Answers besides the kind's errors, or in their place. */
  errors?: Answers
  /** The envelope's message on success. */
  message: string
}

/** What the routes about one kind of record share. */
interface RecordKind<E extends TSchema> {
  tags: string[]
  /** The collection's path; one record is at `<path>/:id`. */
  path?: string
  /** The envelope of one record. */
  envelope: E
  /** The answers of a route about one record when it is another organization's or does not exist. */
  errors: Answers
  /** Whether its records carry a version: reads answer `If-None-Match`, changes take `If-Match`. */
  versioned?: boolean
}

const ETAG_NOTE = 'Carries the ETag `W/"<version>"`; with a current `If-None-Match`, 304 without a body.'

/**
 * Declares the routes of one kind of record. Each calls its service with the database and the
 * caller and, on a route about one record, its id, the body (if the route takes one) and the version
 * `If-Match` names; it answers the result in the envelope. A creation answers 201 and names the new
 * record for the audit trail; a merge patch is checked like the PUT body once merged.
 */
export function recordRoutes<E extends TSchema>(app: App, kind: RecordKind<E>) {
  const { tags, path = '', envelope, errors, versioned = true } = kind
  const item = `${path}/:id`
  // A read says how its ETag works unless the route says more.
  const conditionalRead = versioned ? { description: ETAG_NOTE, headers: IfNoneMatchHeaders } : {}
  const conditionalChange = versioned ? { headers: IfMatchHeaders } : {}
  const answers = (answer: TSchema = envelope, particular?: Answers): Answers => ({
    200: answer,
    ...errors,
    ...particular,
  })

  /** The schema of a route that changes the record at `:id` with a body. */
  const changeSchema = <B extends TSchema>(operation: Operation, body: B, response: Answers) => ({
    tags,
    ...operation,
    params: IdParams,
    ...conditionalChange,
    body,
    response,
  })

  /** `method` `<path>/:id<suffix>` with a body. */
  function changeWithBody<B extends TSchema, A extends TSchema = E>(
    method: 'POST' | 'PUT',
    suffix: string,
    route: Operation &
      ChangeAnswers<A> & { body: B; change: ChangeWith<Static<B>, DataOf<A>>; config?: FastifyContextConfig },
  ) {
    const { answer, errors, message, change, body, config, ...operation } = route
    app.route({
      method,
      url: `${item}${suffix}`,
      config,
      schema: changeSchema(operation, body, answers(answer, errors)),
      handler: async (request) =>
        ok(
          message,
          await change(
            app.db,
            principalOf(request),
            request.params.id,
            request.body,
            request.expectedVersion,
          ),
        ),
    })
  }

  return {
    /** GET `<path>/:id`. */
    get(route: Operation & { message: string; read: Read<DataOf<E>> }) {
      const { message, read, ...operation } = route
      app.get(
        item,
        { schema: { tags, ...conditionalRead, ...operation, params: IdParams, response: answers() } },
        async (request) => ok(message, await read(app.db, principalOf(request), request.params.id)),
      )
    },

    /** POST `<path>`. */
    create<B extends TSchema, R extends { 201: TSchema } & Answers>(
      route: Operation & {
        body: B
        response: R
        message: string
        create: (db: Db, actor: Principal, body: Static<B>) => Promise<DataOf<R[201]> & { id: number }>
      },
    ) {
      const { message, create, body, response, ...operation } = route
      const documented: Answers = response
      app.post(
        path,
        { schema: { tags, ...operation, body, response: documented } },
        async (request, reply) => {
          const record = await create(app.db, principalOf(request), request.body)
          request.auditedIds = [record.id]
          return reply.code(201).send(ok(message, record))
        },
      )
    },

    /** PUT `<path>/:id`, and PATCH `<path>/:id` with a merge patch of the same body; both answer alike. */
    putAndPatch<B extends TSchema, P extends TSchema>(routes: {
      errors?: Answers
      message: string
      put: Operation & { body: B; replace: ChangeWith<Static<B>, DataOf<E>> }
      patch: Operation & { body: P; patch: Patch<Static<P>, Static<B>, DataOf<E>> }
    }) {
      const { errors, message, put, patch } = routes
      const { replace, ...replacement } = put
      changeWithBody('PUT', '', { ...replacement, errors, message, change: replace })
      const { patch: change, body, ...operation } = patch
      app.patch(
        item,
        { schema: changeSchema(operation, body, answers(envelope, errors)) },
        async (request) => {
          const validate = (merged: unknown) => validMergedBody(request, put.body, merged)
          const record = await change(
            app.db,
            principalOf(request),
            request.params.id,
            request.body,
            request.expectedVersion,
            validate,
          )
          return ok(message, record)
        },
      )
    },

    /** `method` `<path>/:id<suffix>` without a body. */
    change<A extends TSchema = E>(
      method: 'POST' | 'PUT' | 'DELETE',
      suffix: string,
      route: Operation & ChangeAnswers<A> & { change: Change<DataOf<A>> },
    ) {
      const { answer, errors, message, change, ...operation } = route
      app.route({
        method,
        url: `${item}${suffix}`,
        schema: {
          tags,
          ...operation,
          params: IdParams,
          ...conditionalChange,
          response: answers(answer, errors),
        },
        handler: async (request) =>
          ok(message, await change(app.db, principalOf(request), request.params.id, request.expectedVersion)),
      })
    },

    changeWithBody,
  }
}
