import { hkdfSync } from 'node:crypto'
import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { SyncCursors } from '../http/sync-cursor.js'
import { purgeTombstones } from '../lib/sync-paging.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Signs and opens the cursors of sync pages. */
    syncCursors: SyncCursors
  }
}

// Tombstones past their retention are removed this often.
const PURGE_INTERVAL_MS = 60 * 60_000

/**
 * Sync reading: signed cursors (with a key derived from the encryption key, so every instance
 * opens the others' cursors) and the purge of tombstones older than the retention.
 */
const sync: FastifyPluginAsync<{ key: Buffer; tombstoneRetentionDays: number }> = async (
  app,
  { key, tombstoneRetentionDays },
) => {
  const cursorKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'ehr sync cursors', 32))
  app.decorate('syncCursors', new SyncCursors(cursorKey))

  const purge = () =>
    purgeTombstones(app.db, tombstoneRetentionDays).catch((error: Error) =>
      app.log.error({ err: { message: error.message } }, 'tombstone purge failed'),
    )
  app.addHook('onReady', async () => {
    void purge()
  })
  const timer = setInterval(purge, PURGE_INTERVAL_MS)
  timer.unref()
  app.addHook('onClose', async () => clearInterval(timer))
}

export default fp(sync, { name: 'sync', dependencies: ['database'] })
