import { type RawBuilder, sql } from 'kysely'
import type { EmittedEvent, EventData } from '../../schemas/events.js'

/** How one field of an event's data is read off the changed row: in code, and in SQL. */
export interface EventField<Row, V> {
  fromRow(row: Row): V
  inSql(changed: RawBuilder<unknown>): RawBuilder<V>
}

/** A column of the row, as it is. */
export const column = <Row, K extends keyof Row & string>(name: K): EventField<Row, Row[K]> => ({
  fromRow: (row) => row[name],
  inSql: (changed) => sql<Row[K]>`${changed}.${sql.ref(name)}`,
})

/** Whether a nullable column of the row holds a value. */
export const isSet = <Row, K extends keyof Row & string>(name: K): EventField<Row, boolean> => ({
  fromRow: (row) => row[name] !== null,
  inSql: (changed) => sql<boolean>`${changed}.${sql.ref(name)} is not null`,
})

/**
 * The one definition of an event's data, field by field, checked against the event's schema
 * type: `toData` maps a row in code (for `enqueueEvent`), `toSql` builds the same object in SQL
 * from the row a statement changed (for `changeWithEvent`, when the change and its event must be
 * one statement).
 */
export function eventMapping<E extends EmittedEvent, Row>(
  fields: {
    [F in keyof EventData<E>]-?: EventField<Row, EventData<E>[F]>
  },
) {
  const entries = Object.entries(fields) as [string, EventField<Row, unknown>][]
  return {
    toData: (row: Row) =>
      Object.fromEntries(entries.map(([name, field]) => [name, field.fromRow(row)])) as EventData<E>,
    toSql: (changed: RawBuilder<unknown>) =>
      sql<EventData<E>>`jsonb_build_object(${sql.join(
        entries.map(([name, field]) => sql`${sql.lit(name)}::text, ${field.inSql(changed)}`),
      )})`,
  }
}
