import type { Resource } from '@medplum/fhirtypes'
import fc from 'fast-check'
import type { Client } from 'fhir-kit-client'
import { expect } from 'vitest'
import { droppedElements } from '../../src/modules/fhir/stored-elements.js'
import { asSent } from './fhir-client.js'
import { fhirErrors } from './fhir-validator.js'

// What the property tests of FHIR writes share: the check of each resource generated, and values
// their generators are made of.

type Stored<R extends Resource> = R & { id: string }

/** What fhir-kit-client answered; a refusal fails with its status and OperationOutcome, which say why. */
async function answer<R extends Resource>(request: Promise<unknown>): Promise<Stored<R>> {
  try {
    return (await request) as Stored<R>
  } catch (error) {
    const { response } = error as { response?: { status: number; data: unknown } }
    if (!response) throw error
    throw new Error(`refused with ${response.status}: ${JSON.stringify(response.data)}`)
  }
}

/**
 * Creates `sent`, a valid R4 resource within what the service stores, and checks that the resource
 * read back is valid too, holds every element sent (the same value at the same place: see
 * droppedElements) and is the one the create answered, and that written back as read it changes
 * nothing: the same resource, version and all. Returns the resource read.
 */
export async function expectStoredAsSent<R extends Resource>(client: Client, sent: R): Promise<Stored<R>> {
  expect(fhirErrors(sent)).toEqual([])
  const { resourceType } = sent
  const created = await answer<R>(client.create({ resourceType, body: asSent(sent) }))
  const read = await answer<R>(client.read({ resourceType, id: created.id }))
  expect(fhirErrors(read)).toEqual([])
  expect(droppedElements(sent, read)).toEqual([])
  expect(read).toEqual(created)
  const again = await answer<R>(client.update({ resourceType, id: created.id, body: asSent(read) }))
  expect(again).toEqual(read)
  return read
}

/** The arbitrary's values, or undefined (an element left out). */
export const optional = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined })

/** Calendar dates (YYYY-MM-DD) from `min` to `max`. */
export const days = (min: string, max: string) =>
  fc
    .date({ min: new Date(`${min}T00:00:00Z`), max: new Date(`${max}T00:00:00Z`), noInvalidDate: true })
    .map((date) => date.toISOString().slice(0, 10))

/** A capitalised word, as a name is written in the simplest case. */
export const word = fc.stringMatching(/^[A-Z][a-z]{1,14}$/)

// FHIR's `string` allows no control characters but tab, CR and LF.
const CONTROL = /(?![\t\n\r])\p{Cc}/u

const graphemes = (maxLength: number) => fc.string({ unit: 'grapheme', minLength: 1, maxLength })

/**
 * Free text as people type it into a string element, at most `maxLength` characters with one not
 * a space: words, printable characters of any script (emoji, combining marks), and text with
 * whitespace at either end, which FHIR's `string` allows.
 */
export const freeText = (maxLength: number) =>
  fc
    .oneof(
      fc.stringMatching(/^[A-Z][a-z]{0,11}( [a-z]{1,12}){0,4}$/),
      graphemes(Math.min(maxLength, 40)),
      fc
        .tuple(fc.constantFrom(' ', '\t', '\n', '\u00a0'), graphemes(20), fc.constantFrom('', ' ', '\r\n'))
        .map((parts) => parts.join('')),
    )
    .filter((text) => /\S/u.test(text) && !CONTROL.test(text) && [...text].length <= maxLength)
