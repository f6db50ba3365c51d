import type {
  DeleteQueryBuilder,
  DeleteResult,
  Insertable,
  Kysely,
  Selectable,
  SelectQueryBuilder,
  Updateable,
  UpdateQueryBuilder,
  UpdateResult,
} from 'kysely'
import type { Database, Db, Trx } from '../../db/database.js'
import { changesRecord } from './versions.js'

/** The tables of one organization's rows: each row names its organization (`organization_id`). */
type OrganizationTable = {
  [T in keyof Database]: Selectable<Database[T]> extends { organization_id: number } ? T : never
}[keyof Database]

/** The tables of one organization's records, each known by its numeric id. */
type RecordTable = {
  [T in OrganizationTable]: Selectable<Database[T]> extends { id: number } ? T : never
}[OrganizationTable]

// Kysely cannot check a statement on a table named by a type parameter. The statements are built on
// a view of the database in which every table has the columns these tables share, and typed as the
// named table's for the caller.
type SharedColumns = { id: number; organization_id: number }
const shared = (db: Db) => db as unknown as Kysely<Record<string, SharedColumns>>

/** The statements of `inOrganization`, on the shared view. */
function sharedInOrganization(db: Db, organizationId: number) {
  const view = shared(db)
  return {
    selectFrom: (table: string) => view.selectFrom(table).where('organization_id', '=', organizationId),
    updateTable: (table: string) => view.updateTable(table).where('organization_id', '=', organizationId),
    deleteFrom: (table: string) => view.deleteFrom(table).where('organization_id', '=', organizationId),
  }
}

type SelectFrom<T extends OrganizationTable> = SelectQueryBuilder<Database, T, object>
type UpdateTable<T extends OrganizationTable> = UpdateQueryBuilder<Database, T, T, UpdateResult>
type DeleteFrom<T extends OrganizationTable> = DeleteQueryBuilder<Database, T, DeleteResult>

/**
 * Statements on one organization's rows of a table: each starts with the organization's filter, so
 * that no read or write of an organization's table can leave it out. The rest is Kysely's, typed as
 * ever. The filter's column is unqualified: for statements on that one table, not joins.
 */
export function inOrganization(db: Db, organizationId: number) {
  const statements = sharedInOrganization(db, organizationId)
  return {
    selectFrom: <T extends OrganizationTable>(table: T) =>
      statements.selectFrom(table) as unknown as SelectFrom<T>,
    updateTable: <T extends OrganizationTable>(table: T) =>
      statements.updateTable(table) as unknown as UpdateTable<T>,
    deleteFrom: <T extends OrganizationTable>(table: T) =>
      statements.deleteFrom(table) as unknown as DeleteFrom<T>,
  }
}

/**
 * One record of an organization's table, by id: read, read and locked for a change, inserted,
 * changed and deleted. Every statement but the insert (whose row names the organization) filters by
 * the organization, so a record of another organization is never found or written.
 */
export function organizationRecords<T extends RecordTable>(table: T) {
  type Row = Selectable<Database[T]>
  const byId = (db: Db, organizationId: number, id: number) =>
    sharedInOrganization(db, organizationId).selectFrom(table).selectAll().where('id', '=', id)
  return {
    find: (db: Db, organizationId: number, id: number) =>
      byId(db, organizationId, id).executeTakeFirst() as Promise<Row | undefined>,
    /** The record, its row locked (FOR UPDATE) until the transaction ends. */
    lock: (trx: Trx, organizationId: number, id: number) =>
      byId(trx, organizationId, id).forUpdate().executeTakeFirst() as Promise<Row | undefined>,
    insert: (db: Db, row: Insertable<Database[T]>) =>
      shared(db)
        .insertInto(table)
        .values(row as Insertable<SharedColumns>)
        .returningAll()
        .executeTakeFirstOrThrow() as Promise<Row>,
    /**
     * Changes the record if that changes something (changesRecord) and returns it; undefined when
     * it would not. The database raises a versioned record's version and sets its change time.
     */
    update: (db: Db, organizationId: number, id: number, changes: Updateable<Database[T]>) =>
      sharedInOrganization(db, organizationId)
        .updateTable(table)
        .set(changes as Updateable<SharedColumns>)
        .where('id', '=', id)
        .where(changesRecord(changes))
        .returningAll()
        .executeTakeFirst() as Promise<Row | undefined>,
    delete: async (db: Db, organizationId: number, id: number): Promise<void> => {
      await sharedInOrganization(db, organizationId).deleteFrom(table).where('id', '=', id).execute()
    },
  }
}
