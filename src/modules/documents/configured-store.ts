import type { StorageSettings } from '../../config/storage.js'
import { type DocumentStore, failingAsUnavailable, localStore } from './store.js'

/**
 * An S3-compatible bucket when S3_BUCKET is set (instances share it), else files under DATA_DIR.
 * The S3 client is loaded only when used (s3-store.ts): it is large, and start-up time matters.
 */
export async function configuredDocumentStore(settings: StorageSettings): Promise<DocumentStore> {
  if (!settings.s3) return failingAsUnavailable(localStore(settings.documentsDir))
  const { s3Store } = await import('./s3-store.js')
  return failingAsUnavailable(await s3Store(settings.s3))
}
