import { expect } from 'vitest'
import type { App } from '../../src/app.js'
import { bearer } from './factories.js'

interface Answer {
  statusCode: number
  body: string
  headers: Record<string, unknown>
  json(): { data: Record<string, unknown> }
}

/**
 * How many events (the outbox, which the change feed reads), webhook deliveries and kept versions
 * the organization has.
 */
async function eventCounts(app: App, organizationId: number) {
  const count = async (table: 'outbox_events' | 'webhook_deliveries' | 'record_history') =>
    Number(
      (
        await app.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('organization_id', '=', organizationId)
          .executeTakeFirstOrThrow()
      ).n,
    )
  return {
    events: await count('outbox_events'),
    deliveries: await count('webhook_deliveries'),
    keptVersions: await count('record_history'),
  }
}

/**
 * Runs `write` and checks that it changed nothing: the answer is 200 with the record as `read`
 * shows it before and after (same version, ETag and updatedAt), and no event, delivery or kept
 * version arose.
 */
export async function expectNoOpWrite(
  app: App,
  organizationId: number,
  read: () => Promise<Answer>,
  write: () => Promise<Answer>,
): Promise<void> {
  const before = await read()
  expect(before.statusCode, before.body).toBe(200)
  const countsBefore = await eventCounts(app, organizationId)
  const answer = await write()
  expect(answer.statusCode, answer.body).toBe(200)
  const record = before.json().data
  expect(answer.json().data).toEqual(record)
  if (record.version !== undefined) expect(answer.headers.etag).toBe(`W/"${record.version}"`)
  const after = await read()
  expect(after.json().data).toEqual(record)
  expect(after.headers.etag).toBe(before.headers.etag)
  expect(await eventCounts(app, organizationId)).toEqual(countsBefore)
}

/** A PUT of what the record at `url` already holds (`same`) and an empty merge patch each change nothing. */
export async function expectSameAndEmptyPatchChangeNothing(
  app: App,
  organizationId: number,
  user: { token: string },
  url: string,
  same: object,
): Promise<void> {
  const read = () => app.inject({ url, headers: bearer(user.token) })
  await expectNoOpWrite(app, organizationId, read, () =>
    app.inject({ method: 'PUT', url, headers: bearer(user.token), payload: same }),
  )
  await expectNoOpWrite(app, organizationId, read, () =>
    app.inject({
      method: 'PATCH',
      url,
      headers: { ...bearer(user.token), 'content-type': 'application/merge-patch+json' },
      payload: '{}',
    }),
  )
}
