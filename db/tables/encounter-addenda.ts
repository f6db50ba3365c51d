import type { ColumnType, Generated, Insertable, Selectable } from 'kysely'

/** Text appended to a signed encounter; the note itself never changes after signing. */
export interface EncounterAddendaTable {
  id: ColumnType<number, never, never>
  organization_id: number
  encounter_id: number
  text: string
  signed_by: number
  signed_at: Generated<Date>
}

export type EncounterAddendumRow = Selectable<EncounterAddendaTable>
export type NewEncounterAddendumRow = Insertable<EncounterAddendaTable>
