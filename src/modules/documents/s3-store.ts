import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { type DocumentStore, measured } from './store.js'

export interface S3StoreOptions {
  bucket: string
  region: string
  endpoint?: string
  accessKeyId?: string
  secretAccessKey?: string
  forcePathStyle: boolean
  prefix: string
}

// Parts in flight per upload: memory per upload is bounded by PART_SIZE × QUEUE_SIZE, whatever the file size.
const PART_SIZE = 8 * 1024 * 1024
const QUEUE_SIZE = 2

/**
 * An S3-compatible bucket, so that several instances share the documents. The SDK is imported here,
 * when a bucket is configured: a static import would load it on every start, bundled or not, and it
 * is the largest package the service has (its share of a start: docs/performance-log.md).
 */
export async function s3Store(options: S3StoreOptions): Promise<DocumentStore> {
  const [{ DeleteObjectCommand, GetObjectCommand, S3Client }, { Upload }] = await Promise.all([
    import('@aws-sdk/client-s3'),
    import('@aws-sdk/lib-storage'),
  ])
  const client = new S3Client({
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.accessKeyId && options.secretAccessKey
      ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey } }
      : {}),
    // Checksums are computed by us (SHA-256 of the whole document); extra per-request checksums
    // are left to servers that require them, which keeps S3-compatible stores working.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
  const objectKey = (key: string) => `${options.prefix}${key}`

  return {
    async write(key, source) {
      const totals = { size: 0, hash: createHash('sha256') }
      const upload = new Upload({
        client,
        params: {
          Bucket: options.bucket,
          Key: objectKey(key),
          Body: Readable.from(measured(source, totals)),
        },
        partSize: PART_SIZE,
        queueSize: QUEUE_SIZE,
        leavePartsOnError: false,
      })
      try {
        await upload.done()
      } catch (error) {
        await client
          .send(new DeleteObjectCommand({ Bucket: options.bucket, Key: objectKey(key) }))
          .catch(() => {})
        throw error
      }
      return { size: totals.size, sha256: totals.hash.digest('hex') }
    },
    async read(key, range) {
      const object = await client.send(
        new GetObjectCommand({
          Bucket: options.bucket,
          Key: objectKey(key),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      )
      return object.Body as Readable
    },
    async remove(key) {
      await client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: objectKey(key) }))
    },
  }
}
