import type { Static, TObject, TProperties } from '@sinclair/typebox'
import type { Db } from '../../../db/database.js'
import type { ClinicalKindName, ClinicalRecordRow } from '../../../db/tables/clinical-records.js'
import type { ClinicalPath } from '../../access/route-access.js'

/** What a kind's input becomes in storage. */
interface PreparedRecord<D> {
  data: D
  status: string
  code: string | null
  /** The clinical time; null: when the record was recorded (a correction keeps that time). */
  effectiveAt: Date | null
}

/**
 * One kind of clinical record: its schemas and the rules that go beyond them. The generic
 * service, queries and routes do the rest, identically for every kind.
 */
export interface ClinicalKind<I extends TObject = TObject, D extends TObject = TObject> {
  kind: ClinicalKindName
  /** Path segment under /api/patients/{patientId}/. */
  path: ClinicalPath
  /** Singular name for messages and the audit trail's resource type. */
  label: string
  input: I
  data: D
  /** The data field that carries the status (set to ENTERED_IN_ERROR when withdrawn). */
  statusField: keyof Static<D> & string
  /** List filters beyond the status field and the time range (the code filter, a category). */
  listFilters: TProperties
  /** The query parameter holding the code filter, if any. */
  codeFilter?: string
  /**
   * Checks what the schema cannot (ranges across fields, code check digits, dates) and derives
   * stored values (BMI, interpretation). `previous` is set for a correction. Throws 422 AppErrors.
   */
  prepare(input: Static<I>, previous?: Static<D>): PreparedRecord<Static<D>>
  /**
   * The input that would correct the stored record to what it is (the base a merge patch is
   * applied to), where the API's record does not show it as written: e.g. a temperature shown in
   * °C only, a measurement time kept apart from the recording time. Default: the record's fields
   * that the input declares.
   */
  inputOf?(row: ClinicalRecordRow): Static<I>
  /** Checks that need the database (e.g. that a named provider exists); throws 422 AppErrors. */
  checkReferences?(db: Db, organizationId: number, input: Static<I>): Promise<void>
  /** A unique index of this kind and the 409 message when it is violated. */
  uniqueness?: { constraint: string; message: string }
}
