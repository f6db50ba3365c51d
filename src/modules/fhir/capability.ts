import type { CapabilityStatement, CapabilityStatementRestResource, Resource } from '@medplum/fhirtypes'
import type { ProviderMetadata } from '../../identity/external-provider.js'
import type { FhirResourceType } from './resource-type.js'
import type { ResourceWrites } from './resource-writes.js'
import { COMMON_SEARCH_PARAMETERS } from './search-conditions.js'
import { PAGE_SIZE_MAX } from './search-params.js'
import { US_CORE_PROVENANCE, US_CORE_SERVER } from './us-core-profiles.js'

const SMART_SCOPE_LEVELS = ['patient', 'user', 'system'] as const

/** The write interactions a type takes: all but delete for one whose records are never deleted. */
function writeInteractions(writes: ResourceWrites<Resource>) {
  const deletes = writes.delete !== undefined
  return {
    interaction: [
      { code: 'create' as const },
      { code: 'update' as const },
      { code: 'patch' as const },
      ...(deletes ? [{ code: 'delete' as const }] : []),
    ],
    // Conditional writes on a search that matches at most one record; ids are the server's to assign.
    conditional: {
      updateCreate: false,
      conditionalCreate: true,
      conditionalUpdate: true,
      conditionalDelete: deletes ? ('single' as const) : ('not-supported' as const),
    },
  }
}
const BULK_DATA = 'http://hl7.org/fhir/uv/bulkdata'

/**
 * What the server implements, built from the resource types it serves: the CapabilityStatement is
 * the truth about the FHIR interface.
 */
export function capabilityStatement(
  base: string,
  types: readonly FhirResourceType[],
  server: ProviderMetadata,
): CapabilityStatement {
  return {
    resourceType: 'CapabilityStatement',
    status: 'active',
    date: '2026-11-24',
    kind: 'instance',
    software: { name: 'EHR Service' },
    instantiates: [US_CORE_SERVER, `${BULK_DATA}/CapabilityStatement/bulk-data`],
    implementation: {
      description: 'EHR Service FHIR R4 interface (read, search, writes where listed, and bulk export)',
      url: base,
    },
    fhirVersion: '4.0.1',
    format: ['json', 'application/fhir+json'],
    rest: [
      {
        mode: 'server',
        security: {
          service: [
            {
              coding: [
                {
                  system: 'http://terminology.hl7.org/CodeSystem/restful-security-service',
                  code: 'SMART-on-FHIR',
                },
              ],
            },
          ],
          extension: [
            {
              url: 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris',
              extension: [
                { url: 'token', valueUri: server.tokenEndpoint },
                ...(server.authorizationEndpoint
                  ? [{ url: 'authorize', valueUri: server.authorizationEndpoint }]
                  : []),
                ...(server.introspectionEndpoint
                  ? [{ url: 'introspect', valueUri: server.introspectionEndpoint }]
                  : []),
                ...(server.revocationEndpoint
                  ? [{ url: 'revoke', valueUri: server.revocationEndpoint }]
                  : []),
              ],
            },
          ],
          description:
            'Bearer tokens of the service (RS256). Roles decide what may be read and written, as in the REST API; SMART scopes (v1 and v2 syntax) narrow it, and patient/ scopes keep a token to its launch patient.',
        },
        resource: [
          ...types.map(
            (type): CapabilityStatementRestResource => ({
              type: type.type,
              ...(type.profile ? { supportedProfile: [type.profile].flat() } : {}),
              documentation: `_sort by one of ${type.sortParameters.join(', ')} (a leading - for descending); _count up to ${PAGE_SIZE_MAX}; _summary=count only (other _summary values and _elements are not supported: whole resources are returned)`,
              interaction: [
                { code: 'read' },
                { code: 'vread' },
                ...(type.versions
                  ? [{ code: 'history-instance' as const }, { code: 'history-type' as const }]
                  : []),
                { code: 'search-type' },
                ...(type.writes ? writeInteractions(type.writes).interaction : []),
              ],
              versioning: 'versioned',
              // Earlier versions are readable (vread) where the type keeps them.
              readHistory: type.versions !== undefined,
              conditionalRead: 'not-match',
              ...(type.writes ? writeInteractions(type.writes).conditional : {}),
              ...(type.type === 'Patient'
                ? {
                    operation: [
                      { name: 'export', definition: `${BULK_DATA}/OperationDefinition/patient-export` },
                    ],
                  }
                : {}),
              ...(type.includes
                ? { searchInclude: Object.keys(type.includes).map((name) => `${type.type}:${name}`) }
                : {}),
              searchRevInclude: ['Provenance:target'],
              searchParam: [...COMMON_SEARCH_PARAMETERS, ...type.searchParameters].map(
                ({ name, type: kind, documentation }) => ({
                  name,
                  type: kind,
                  documentation,
                }),
              ),
            }),
          ),
          {
            type: 'Provenance',
            supportedProfile: [US_CORE_PROVENANCE],
            documentation:
              'The provenance of every record served, Provenance/[type]-[id] (Provenance/Condition-12 is that of Condition/12): who wrote its current version (the provider, on behalf of the organization; else the organization) and when. Read by whoever reads the record, with a scope that allows Provenance; its current version only. Searched by target; every type’s search returns it with _revinclude=Provenance:target',
            interaction: [{ code: 'read' }, { code: 'vread' }, { code: 'search-type' }],
            versioning: 'versioned',
            readHistory: false,
            searchParam: [
              {
                name: 'target',
                type: 'reference',
                documentation: `The records whose provenance is asked for ([type]/[id], up to ${PAGE_SIZE_MAX}, comma-separated); the only parameter`,
              },
            ],
          } satisfies CapabilityStatementRestResource,
          {
            type: 'Binary',
            documentation:
              'The bytes of a DocumentReference (its attachment URL), in their stored content type; as a Binary resource with Accept: application/fhir+json (up to 5 MiB). Create: POST the raw bytes (Content-Type: the document’s) with X-Security-Context: Patient/[id], or a Binary resource whose securityContext is the patient; it stores a new document of that patient (category OTHER), DocumentReference/[id] of the same id',
            interaction: [{ code: 'read' }, { code: 'vread' }, { code: 'create' }],
            versioning: 'versioned',
            readHistory: false,
          } satisfies CapabilityStatementRestResource,
          {
            type: 'Group',
            documentation:
              'The populations a bulk export can name: all-patients, and provider-[id] (the patients with appointments with that practitioner)',
            interaction: [{ code: 'read' }, { code: 'search-type' }],
            searchParam: [{ name: '_id', type: 'token', documentation: 'Logical id' }],
            operation: [{ name: 'export', definition: `${BULK_DATA}/OperationDefinition/group-export` }],
          } satisfies CapabilityStatementRestResource,
        ],
        // POST of a batch or transaction Bundle to the base; the history of every type served.
        interaction: [{ code: 'transaction' }, { code: 'batch' }, { code: 'history-system' }],
        operation: [{ name: 'export', definition: `${BULK_DATA}/OperationDefinition/export` }],
      },
    ],
  }
}

/**
 * The SMART resource scopes the FHIR interface honours, one of each form per type and level: read
 * ones for every type, write ones (v1 `write`, v2 `cud`) for the types that take writes.
 */
export function smartResourceScopes(types: readonly FhirResourceType[]): string[] {
  return SMART_SCOPE_LEVELS.flatMap((level) => [
    `${level}/*.read`,
    `${level}/*.rs`,
    ...types.flatMap((type) => [
      `${level}/${type.type}.read`,
      `${level}/${type.type}.rs`,
      ...(type.writes ? [`${level}/${type.type}.write`, `${level}/${type.type}.cud`] : []),
    ]),
  ])
}

const SESSION_SCOPES = ['online_access', 'offline_access']

/**
 * SMART App Launch's discovery document (/.well-known/smart-configuration): the endpoints and
 * methods of the authorization server that issues the tokens (the embedded issuer, or the external
 * provider as its own discovery document describes it), and the scopes this FHIR server honours.
 */
export function smartConfiguration(types: readonly FhirResourceType[], server: ProviderMetadata) {
  const methods = server.tokenEndpointAuthMethodsSupported
  const offers = (scope: string) => server.scopesSupported?.includes(scope) === true
  // Apps launch where the authorization server has the code flow (the embedded issuer does).
  const launches =
    server.authorizationEndpoint !== undefined && server.grantTypesSupported.includes('authorization_code')
  return {
    issuer: server.issuer,
    jwks_uri: server.jwksUri,
    ...(server.authorizationEndpoint ? { authorization_endpoint: server.authorizationEndpoint } : {}),
    token_endpoint: server.tokenEndpoint,
    ...(server.revocationEndpoint ? { revocation_endpoint: server.revocationEndpoint } : {}),
    ...(server.introspectionEndpoint ? { introspection_endpoint: server.introspectionEndpoint } : {}),
    // Not among SMART's own fields, which allow more: OpenID Connect Discovery's, for the fhirUser claim.
    ...(server.userinfoEndpoint ? { userinfo_endpoint: server.userinfoEndpoint } : {}),
    grant_types_supported: server.grantTypesSupported,
    token_endpoint_auth_methods_supported: methods,
    ...(server.tokenEndpointAuthSigningAlgValuesSupported
      ? {
          token_endpoint_auth_signing_alg_values_supported: server.tokenEndpointAuthSigningAlgValuesSupported,
        }
      : {}),
    ...(server.codeChallengeMethodsSupported
      ? { code_challenge_methods_supported: server.codeChallengeMethodsSupported }
      : {}),
    scopes_supported: [
      'openid',
      'profile',
      'email',
      ...SESSION_SCOPES.filter(offers),
      ...smartResourceScopes(types),
    ],
    capabilities: [
      ...(methods.some((method) => method.startsWith('client_secret_'))
        ? ['client-confidential-symmetric']
        : []),
      ...(methods.includes('private_key_jwt') ? ['client-confidential-asymmetric'] : []),
      ...(methods.includes('none') ? ['client-public'] : []),
      ...(launches
        ? [
            'launch-standalone',
            'launch-ehr',
            'context-ehr-patient',
            'context-standalone-patient',
            'sso-openid-connect',
            'permission-patient',
            'permission-user',
          ]
        : []),
      'permission-v1',
      'permission-v2',
      ...(offers('offline_access') ? ['permission-offline'] : []),
      ...(offers('online_access') ? ['permission-online'] : []),
    ],
  }
}
