import { type Static, Type } from '@sinclair/typebox'

export const SyncEnv = Type.Object(
  {
    REQUIRE_IF_MATCH: Type.Boolean({
      default: false,
      description:
        'Make `If-Match` mandatory on conditional writes (PUT, PATCH, DELETE and state changes of versioned records): without it they answer 428 RES_003, so no client can overwrite a change it has not seen',
    }),
    TOMBSTONE_RETENTION_DAYS: Type.Integer({
      minimum: 1,
      maximum: 36_500,
      default: 90,
      description:
        'How long sync readers (`updatedSince`, `cursor`) see a removed record as a tombstone; a client away for longer must sync again from zero',
    }),
  },
  { title: 'Concurrent edits and sync' },
)

export interface SyncSettings {
  requireIfMatch: boolean
  tombstoneRetentionDays: number
}

export function syncSettings(env: Static<typeof SyncEnv>): SyncSettings {
  return { requireIfMatch: env.REQUIRE_IF_MATCH, tombstoneRetentionDays: env.TOMBSTONE_RETENTION_DAYS }
}
