import path from 'node:path'
import { type Static, Type } from '@sinclair/typebox'

export const StorageEnv = Type.Object(
  {
    DATA_DIR: Type.String({
      minLength: 1,
      default: './data',
      description:
        'Embedded database files (`$DATA_DIR/pgdata`), document bytes without S3 (`$DATA_DIR/documents`) and the generated encryption key; its free space is reported by `/actuator/health`',
    }),
    MAX_UPLOAD_BYTES: Type.Integer({
      minimum: 1024,
      maximum: 5 * 1024 ** 3,
      default: 25 * 1024 * 1024,
      description: 'Largest document upload (25 MiB); larger is 413',
    }),
    DOCUMENT_RETENTION_DAYS: Type.Integer({
      minimum: 0,
      maximum: 36_500,
      default: 30,
      description: 'How long the bytes of a deleted document are kept before they are purged (0: at once)',
    }),
    S3_BUCKET: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$',
        examples: ['ehr-documents'],
        description:
          'Keep document bytes in this S3-compatible bucket (shared by all instances); unset = files under `$DATA_DIR/documents`',
      }),
    ),
    S3_REGION: Type.String({ minLength: 1, default: 'us-east-1', description: 'Bucket region' }),
    S3_ENDPOINT: Type.Optional(
      Type.String({
        pattern: '^https?://',
        examples: ['https://minio.internal:9000'],
        description: 'Endpoint of an S3-compatible store (MinIO, Ceph, …); unset = AWS',
      }),
    ),
    S3_ACCESS_KEY_ID: Type.Optional(
      Type.String({
        minLength: 1,
        description: "Access key id; unset = the SDK's default chain (environment, instance role)",
      }),
    ),
    S3_SECRET_ACCESS_KEY: Type.Optional(
      Type.String({
        minLength: 1,
        description: "Secret access key; unset = the SDK's default chain (environment, instance role)",
      }),
    ),
    S3_FORCE_PATH_STYLE: Type.Boolean({
      default: true,
      description: 'Path-style bucket addressing (what most S3-compatible servers need)',
    }),
    S3_PREFIX: Type.String({
      pattern: '^([A-Za-z0-9._-]+/)*$',
      default: 'documents/',
      description: 'Key prefix of the stored objects',
    }),
  },
  { title: 'Files and documents' },
)

interface S3Settings {
  bucket: string
  region: string
  endpoint: string | undefined
  accessKeyId: string | undefined
  secretAccessKey: string | undefined
  forcePathStyle: boolean
  prefix: string
}

export interface StorageSettings {
  dataDir: string
  /** Where document bytes are kept without S3. */
  documentsDir: string
  maxUploadBytes: number
  documentRetentionDays: number
  /** The bucket documents are kept in, when S3_BUCKET is set. */
  s3: S3Settings | undefined
}

export function storageSettings(env: Static<typeof StorageEnv>): StorageSettings {
  return {
    dataDir: env.DATA_DIR,
    documentsDir: path.join(env.DATA_DIR, 'documents'),
    maxUploadBytes: env.MAX_UPLOAD_BYTES,
    documentRetentionDays: env.DOCUMENT_RETENTION_DAYS,
    s3: env.S3_BUCKET
      ? {
          bucket: env.S3_BUCKET,
          region: env.S3_REGION,
          endpoint: env.S3_ENDPOINT,
          accessKeyId: env.S3_ACCESS_KEY_ID,
          secretAccessKey: env.S3_SECRET_ACCESS_KEY,
          forcePathStyle: env.S3_FORCE_PATH_STYLE,
          prefix: env.S3_PREFIX,
        }
      : undefined,
  }
}
