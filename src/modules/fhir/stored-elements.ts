import type { Resource } from '@medplum/fhirtypes'

// What the service sets itself: a client's copy of them (a resource read and written back) is no
// element to store.
const SERVER_ELEMENTS: ReadonlySet<string> = new Set(['id', 'meta.versionId', 'meta.lastUpdated'])

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const ZONED_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3}0*)?(?:Z|[+-]\d{2}:\d{2})$/

/** The moment a date-time with a zone names (an instant), to the millisecond; undefined for any other value. */
const momentOf = (value: unknown) =>
  typeof value === 'string' && ZONED_DATE_TIME.test(value) ? Date.parse(value) : undefined

/**
 * Whether a value sent is the value stored. A date-time with a zone is held by the same moment
 * written otherwise (`10:00:00+02:00`, `08:00:00.000Z`): the service keeps the moment, in UTC.
 */
function sameValue(sent: unknown, stored: unknown): boolean {
  if (sent === stored) return true
  const moment = momentOf(sent)
  return moment !== undefined && moment === momentOf(stored)
}

/** Whether `stored` holds everything `sent` says: every element, at any depth, with the same value. */
function holds(sent: unknown, stored: unknown): boolean {
  if (Array.isArray(sent)) {
    return Array.isArray(stored) && sent.every((item) => stored.some((kept) => holds(item, kept)))
  }
  if (isObject(sent)) {
    return isObject(stored) && Object.entries(sent).every(([name, value]) => holds(value, stored[name]))
  }
  return sameValue(sent, stored)
}

const sharesElement = (item: Record<string, unknown>, stored: Record<string, unknown>) =>
  Object.entries(item).some(([name, value]) => holds(value, stored[name]))

/** A profile a client names without a version is held by the service's claim of it with one. */
function withClaimedProfiles(sent: Resource, stored: Resource): Resource {
  const claimed = stored.meta?.profile
  if (!sent.meta?.profile || !claimed) return sent
  const profile = sent.meta.profile.map((url) => claimed.find((own) => own.split('|')[0] === url) ?? url)
  return { ...sent, meta: { ...sent.meta, profile } }
}

/**
 * The elements of `sent` that `stored` (the same resource as the service keeps it) does not hold,
 * as FHIRPath expressions (`Patient.name[0].given[2]`): what a write would drop. An array's item is
 * held when some item of the stored array holds it, so an order the service keeps differently
 * drops nothing.
 */
export function droppedElements(sent: Resource, stored: Resource): string[] {
  const dropped: string[] = []
  const walk = (value: unknown, kept: unknown, path: string, dotted: string) => {
    if (SERVER_ELEMENTS.has(dotted) || holds(value, kept)) return
    if (isObject(value) && isObject(kept)) {
      for (const [name, item] of Object.entries(value)) {
        walk(item, kept[name], `${path}.${name}`, dotted ? `${dotted}.${name}` : name)
      }
    } else if (Array.isArray(value) && Array.isArray(kept)) {
      // An item no stored item holds: compared with the stored item in its place when the two
      // share an element (the same name with another given name), to name what within it is
      // dropped; otherwise dropped whole.
      value.forEach((item, index) => {
        if (kept.some((candidate) => holds(item, candidate))) return
        const counterpart = kept[index]
        if (isObject(item) && isObject(counterpart) && sharesElement(item, counterpart)) {
          walk(item, counterpart, `${path}[${index}]`, dotted)
        } else {
          dropped.push(`${path}[${index}]`)
        }
      })
    } else {
      dropped.push(path)
    }
  }
  const { resourceType, ...elements } = withClaimedProfiles(sent, stored)
  walk(elements, stored, resourceType, '')
  return dropped
}
