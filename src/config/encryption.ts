import { type Static, Type } from '@sinclair/typebox'

export const EncryptionEnv = Type.Object(
  {
    ENCRYPTION_KEY: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9+/]{43}=$',
        description:
          '32 random bytes, base64 (`openssl rand -base64 32`): encrypts the token-signing private keys and webhook secrets at rest (AES-256-GCM). Unset with the embedded database: generated once into `$DATA_DIR/encryption.key` (mode 0600). **Required with `DATABASE_URL`** (the service refuses to start without it), since every instance must decrypt with the same key. Losing it makes stored secrets unusable',
      }),
    ),
    ENCRYPTION_KEY_PREVIOUS: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9+/]{43}=$',
        description:
          'The key `ENCRYPTION_KEY` replaces, during a key change only: values still sealed with it stay readable while `npm run keys -- reencrypt` moves them to the new key (docs/operations.md, Key and secret rotation). Also usable the other way round, the new key here and the old one still in `ENCRYPTION_KEY`, so that every instance can read the new key before any writes with it. Unset once the re-encryption is done',
      }),
    ),
  },
  { title: 'Encryption at rest' },
)

export interface EncryptionSettings {
  /** ENCRYPTION_KEY, base64. */
  key: string | undefined
  /** ENCRYPTION_KEY_PREVIOUS, base64. */
  previousKey: string | undefined
  /** Where a key is generated and kept when none is configured: DATA_DIR. */
  keyDir: string
  /** A shared database: every instance must decrypt with the same key, so it must be configured. */
  keyRequired: boolean
}

export function encryptionProblems(settings: Pick<EncryptionSettings, 'key' | 'keyRequired'>): string[] {
  return settings.keyRequired && settings.key === undefined
    ? [
        'ENCRYPTION_KEY: required when DATABASE_URL is set (every instance must use the same key); create one with `openssl rand -base64 32`',
      ]
    : []
}

export function encryptionSettings(
  env: Static<typeof EncryptionEnv>,
  { dataDir, sharedDatabase }: { dataDir: string; sharedDatabase: boolean },
): EncryptionSettings {
  return {
    key: env.ENCRYPTION_KEY,
    previousKey: env.ENCRYPTION_KEY_PREVIOUS,
    keyDir: dataDir,
    keyRequired: sharedDatabase,
  }
}
