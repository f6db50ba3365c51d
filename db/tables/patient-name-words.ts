/** Each live patient's name words, alone (next_word '') and in ordered pairs; maintained by a trigger only. */
export interface PatientNameWordsTable {
  organization_id: number
  word: string
  next_word: string
  patient_id: number
}
