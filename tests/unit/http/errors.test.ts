import { describe, expect, it } from 'vitest'
import { AppError, ERRORS, fromDatabaseError, invalidField, invalidFields } from '../../../src/errors.js'

describe('fromDatabaseError', () => {
  it.each([
    [{ code: '23505', constraint: 'x_key' }, 409, 'RES_002'],
    [
      { code: '23503', message: 'insert or update on table "a" violates foreign key constraint' },
      422,
      'VAL_001',
    ],
    [
      { code: '23503', message: 'update or delete on table "a" violates foreign key constraint' },
      409,
      'RES_002',
    ],
    [{ code: '23502' }, 422, 'VAL_002'],
    [{ code: '23514', constraint: 'status_check' }, 422, 'VAL_001'],
    [{ code: '23P01', constraint: 'no_overlap' }, 409, 'RES_002'],
    [{ code: '22007' }, 400, 'VAL_001'],
    [{ code: '40001' }, 503, 'SYS_002'],
    [{ code: 'ECONNREFUSED' }, 503, 'SYS_002'],
    [{ code: '57P01' }, 503, 'SYS_002'],
    [{ message: 'Connection terminated unexpectedly' }, 503, 'SYS_002'],
  ])('maps %o to %i %s', (error, status, code) => {
    const mapped = fromDatabaseError(error)
    expect(mapped).toBeInstanceOf(AppError)
    expect(mapped?.status).toBe(status)
    expect(mapped?.code).toBe(code)
  })

  it('says which rule a known constraint enforces, without values', () => {
    expect(fromDatabaseError({ code: '23P01', constraint: 'appointments_no_overlap' })?.details).toBe(
      'The provider already has an appointment overlapping this time',
    )
    expect(fromDatabaseError({ code: '23505', constraint: 'encounters_appointment_key' })?.details).toBe(
      'The appointment already has an encounter',
    )
  })

  it.each([
    ['23505', 'invoices_organization_number_key'],
    ['23505', 'sessions_refresh_token_hash_key'],
    ['23P01', 'some_exclusion'],
    ['23514', 'users_kind_check'],
    ['23505', undefined],
  ])('never names the table, column or constraint (%s %s)', (code, constraint) => {
    const mapped = fromDatabaseError({ code, constraint, table: 'users', column: 'kind' })
    expect(mapped).toBeInstanceOf(AppError)
    expect(mapped?.details).not.toMatch(/_key|_check|exclusion|users|kind|undefined/)
    expect(JSON.stringify(mapped?.fields ?? [])).not.toMatch(/_key|_check|exclusion|users|kind|undefined/)
  })

  it.each([
    ['patients_organization_mrn_key', 'mrn'],
    ['users_email_key', 'email'],
    ['providers_organization_npi_key', 'npi'],
    ['providers_user_key', 'userId'],
    ['encounters_appointment_key', 'appointmentId'],
    ['telehealth_rooms_appointment_id_key', 'appointmentId'],
  ])('answers the duplicate a client can cause (%s) in words, naming the field %s', (constraint, path) => {
    const mapped = fromDatabaseError({ code: '23505', constraint })
    expect(mapped?.status).toBe(409)
    expect(mapped?.details).not.toContain(constraint)
    expect(mapped?.fields).toEqual([{ path, message: expect.any(String) }])
  })

  it('names the body in error.fields for every 422 it maps to', () => {
    for (const error of [
      { code: '23503', message: 'insert or update' },
      { code: '23502' },
      { code: '23514' },
    ]) {
      const mapped = fromDatabaseError(error)
      expect(mapped?.status).toBe(422)
      expect(mapped?.fields).toEqual([{ path: '', message: expect.any(String) }])
    }
  })

  it('leaves other errors to the generic 500', () => {
    expect(fromDatabaseError(new Error('boom'))).toBeUndefined()
    expect(fromDatabaseError({ code: '42P01' })).toBeUndefined()
    expect(fromDatabaseError(undefined)).toBeUndefined()
  })

  it('never puts the driver detail (which can hold values) in the details', () => {
    const mapped = fromDatabaseError({
      code: '23505',
      constraint: 'k',
      detail: 'Key (email)=(jane@example.com)',
    })
    expect(mapped?.details).not.toContain('jane')
  })
})

describe('the error table', () => {
  it('has every code of the specification, AUTH_004, RATE_001 and RES_003, with its status', () => {
    expect(Object.fromEntries(Object.entries(ERRORS).map(([code, { status }]) => [code, status]))).toEqual({
      AUTH_001: 401,
      AUTH_002: 401,
      AUTH_003: 403,
      AUTH_004: 403,
      VAL_001: 422,
      VAL_002: 422,
      RES_001: 404,
      RES_002: 409,
      RES_003: 412,
      RATE_001: 429,
      SYS_001: 500,
      SYS_002: 503,
    })
  })
})

describe('422 errors', () => {
  it('name their fields: one with a details sentence built from them, or given', () => {
    expect(invalidField('npi', 'fails the NPI check digit')).toMatchObject({
      status: 422,
      code: 'VAL_001',
      details: 'npi fails the NPI check digit',
      fields: [{ path: 'npi', message: 'fails the NPI check digit' }],
    })
    const missing = invalidFields(
      [{ path: '', message: 'must hold at least one measurement' }],
      undefined,
      'VAL_002',
    )
    expect(missing).toMatchObject({
      status: 422,
      code: 'VAL_002',
      details: 'body must hold at least one measurement',
    })
  })

  it('cannot be built without fields: only another status may leave them out', () => {
    // @ts-expect-error a 422 (VAL_001's default status) must name the fields at fault
    const unnamed = () => new AppError('VAL_001', 'npi fails the NPI check digit')
    // @ts-expect-error nor may a 422 be asked for explicitly without them
    const explicit = () => new AppError('VAL_002', 'title is required', { status: 422 })
    expect(unnamed().fields).toBeUndefined()
    expect(explicit().fields).toBeUndefined()
    expect(new AppError('VAL_001', 'The URL is malformed', { status: 400 }).status).toBe(400)
  })
})
