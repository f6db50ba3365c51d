import type { RawBuilder } from 'kysely'
import { describe, expectTypeOf, it } from 'vitest'
import type { Db, Trx } from '../../../db/database.js'
import type { EventData } from '../../../schemas/events.js'
import { announceDeliveries, type EventTrx, transactionWithEvents } from '../../../src/outbox/doorbell.js'
import { changeWithEvent, enqueueEvent, enqueueTestDelivery } from '../../../src/outbox/enqueue.js'

declare const data: EventData<'patient.created'>
declare const change: Parameters<typeof changeWithEvent>[3]
declare const eventData: (changed: RawBuilder<unknown>) => RawBuilder<EventData<'patient.created'>>

// Checked by the type checker (npm run typecheck): nothing here runs a query.
describe('recording an event, as the types allow it', () => {
  it('takes the transaction transactionWithEvents opens, and no other', () => {
    expectTypeOf<Trx>().not.toExtend<EventTrx>()
    expectTypeOf(transactionWithEvents<void>)
      .parameter(1)
      .parameter(0)
      .toEqualTypeOf<EventTrx>()
    expectTypeOf(enqueueEvent<'patient.created'>)
      .parameter(0)
      .toEqualTypeOf<EventTrx>()
    expectTypeOf(enqueueTestDelivery).parameter(0).toEqualTypeOf<EventTrx>()
    const plain = async (trx: Trx) => {
      // @ts-expect-error nothing would announce the deliveries of an event recorded in a plain transaction
      await enqueueEvent(trx, 1, 'patient.created', data)
      // @ts-expect-error as above
      await enqueueTestDelivery(trx, 1, 1)
      // @ts-expect-error as above
      await changeWithEvent(trx, 1, 'patient.created', change, eventData)
      // @ts-expect-error as above
      announceDeliveries(trx)
    }
    expectTypeOf(plain).returns.resolves.toBeVoid()
  })

  it('takes the database for a statement that commits by itself, and an EventTrx', () => {
    const allowed = async (db: Db, trx: EventTrx) => {
      await changeWithEvent(db, 1, 'patient.created', change, eventData)
      await changeWithEvent(trx, 1, 'patient.created', change, eventData)
      announceDeliveries(db)
      announceDeliveries(trx)
    }
    expectTypeOf(allowed).returns.resolves.toBeVoid()
  })
})
