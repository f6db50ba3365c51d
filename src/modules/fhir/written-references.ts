import type { Reference } from '@medplum/fhirtypes'
import { AppError, invalidField } from '../../errors.js'
import type { Referenced } from './resource-elements.js'

// What a write does with the references of the resource it is sent: the records they name.

const MAX_ID = 2_147_483_647

/** The id of the record of `type` a reference names as `Type/<id>`; undefined when it names none. */
export function referencedId(reference: Reference | undefined, type: Referenced): number | undefined {
  const id = reference?.reference?.match(new RegExp(`^${type}/([1-9][0-9]{0,9})$`))?.[1]
  return id !== undefined && Number(id) <= MAX_ID ? Number(id) : undefined
}

/** The id a reference names: one to a record of this server, as `Type/<id>` (a 422 naming `field` otherwise). */
export function idIn(reference: Reference | undefined, type: Referenced, field: string): number | undefined {
  if (reference === undefined) return undefined
  const id = referencedId(reference, type)
  if (id === undefined) {
    throw invalidField(field, `must reference a record of this server, as ${type}/<id>`)
  }
  return id
}

export const namesNothing = (field: string, reference: string) =>
  invalidField(field, `names ${reference}, which is no record of this service`)

/** The record a reference names; one naming none is a 422 on the body field it stands for. */
export async function referenced<T>(field: string, reference: string, find: () => Promise<T>): Promise<T> {
  try {
    return await find()
  } catch (error) {
    if (error instanceof AppError && error.status === 404) throw namesNothing(field, reference)
    throw error
  }
}
