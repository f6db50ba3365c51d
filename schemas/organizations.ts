import { type Static, Type } from '@sinclair/typebox'
import {
  AddressData,
  AddressInput,
  Email,
  Envelope,
  Id,
  MergePatch,
  Named,
  Nullable,
  PhoneNumber,
  Text,
  Timestamp,
  Version,
} from './common.js'

const Optional = <T extends Parameters<typeof Nullable>[0]>(schema: T) => Type.Optional(Nullable(schema))

const PracticeNpi = Type.String({
  pattern: '^[0-9]{10}$',
  description:
    'The practice’s own (organization, type 2) National Provider Identifier: 10 digits, the last a Luhn check digit over the other nine prefixed with 80840',
  examples: ['1245319599'],
})

export const UpdateOrganizationBody = Named(
  'OrganizationUpdate',
  Type.Object(
    {
      name: Text(200),
      npi: Optional(PracticeNpi),
      phoneNumber: Optional(PhoneNumber),
      email: Optional(Email),
      address: Optional(AddressInput),
    },
    {
      additionalProperties: false,
      description:
        'Replaces what the practice tells about itself; optional fields left out are cleared (use PATCH to change some only). Published as the FHIR Organization and Location of the practice.',
      examples: [
        {
          name: 'Riverside Family Practice',
          npi: '1245319599',
          phoneNumber: '+1 555 010 2000',
          email: 'front-desk@riverside.example',
          address: {
            street: '12 Main Street',
            city: 'Springfield',
            state: 'IL',
            postalCode: '62701',
            country: 'US',
          },
        },
      ],
    },
  ),
)
export type UpdateOrganizationBody = Static<typeof UpdateOrganizationBody>

export const PatchOrganizationBody = Named(
  'OrganizationPatch',
  MergePatch(UpdateOrganizationBody, {
    description:
      'A JSON Merge Patch (RFC 7396) of the practice’s details: only the members sent change, `null` removes an optional one, nested objects (`address`) merge. The merged record is checked like a full replacement (422). Read-only members (`id`, `version`, …) are refused.',
    examples: [{ phoneNumber: '+1 555 010 2001', address: { street: '14 Main Street' } }],
  }),
)
export type PatchOrganizationBody = Static<typeof PatchOrganizationBody>

export const Organization = Named(
  'Organization',
  Type.Object({
    id: Id,
    name: Type.String(),
    npi: Nullable(Type.String()),
    phoneNumber: Nullable(Type.String()),
    email: Nullable(Type.String({ format: 'email' })),
    address: AddressData,
    version: Version,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)
export type Organization = Static<typeof Organization>

export const OrganizationEnvelope = Envelope(Organization)
