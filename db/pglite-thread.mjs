// The embedded database's own thread: PGlite runs here, off the service's event loop. Plain
// JavaScript, so that it runs as it is wherever the service does (tsx, vitest, the bundle).
// Messages in: { id, op: 'query', sql, params } · { id, op: 'listen', channel } · { id, op: 'unlisten',
// listener } · { id, op: 'dump' } · { id, op: 'close' }. Out: { op: 'ready' } or { op: 'failed', error }
// once, then { id, result } or { id, error } per message, and { op: 'notify', listener, payload }.
import { parentPort, workerData } from 'node:worker_threads'

/** What crosses to the service of an error: its message and PostgreSQL's fields (code, constraint…). */
function plain(error) {
  const fields = { message: error instanceof Error ? error.message : String(error) }
  if (error && typeof error === 'object') {
    for (const [key, value] of Object.entries(error)) {
      if (typeof value === 'string' || typeof value === 'number') fields[key] = value
    }
  }
  return fields
}

async function open({ dataDir, loadDataDir, sharedBuffersMb }) {
  const [{ PGlite, types }, { pg_trgm }, { btree_gist }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('@electric-sql/pglite/contrib/btree_gist'),
  ])
  return PGlite.create({
    ...(dataDir ? { dataDir } : {}),
    ...(loadDataDir ? { loadDataDir: new Blob([loadDataDir]) } : {}),
    extensions: { pg_trgm, btree_gist },
    // Rather than the data directory's 128 MB, which are zeroed in WebAssembly memory at every open.
    startParams: [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffersMb}MB`],
    // The same types as on PostgreSQL (db/postgres.ts): int8 values are numbers, dates stay
    // 'YYYY-MM-DD' text (a Date would shift a birth date across time zones).
    parsers: { [types.INT8]: Number, [types.DATE]: (value) => value },
  })
}

// Listening from the first moment, not once the database is open: a message that reached the port
// before anyone listened was seen only at the thread's next wake-up, which every start spent
// waiting for its first statement (docs/performance-log.md).
const opening = open(workerData).then(
  (pglite) => {
    parentPort.postMessage({ op: 'ready' })
    return pglite
  },
  (error) => {
    parentPort.postMessage({ op: 'failed', error: plain(error) })
    parentPort.close()
    return undefined
  },
)

const listeners = new Map()
const operations = {
  query: async (pglite, { sql, params }) => {
    const { rows, affectedRows } = await pglite.query(sql, params)
    return { rows, affectedRows }
  },
  listen: async (pglite, { id, channel }) => {
    listeners.set(
      id,
      await pglite.listen(channel, (payload) =>
        parentPort.postMessage({ op: 'notify', listener: id, payload }),
      ),
    )
    return id
  },
  unlisten: async (_pglite, { listener }) => {
    const unsubscribe = listeners.get(listener)
    listeners.delete(listener)
    await unsubscribe?.()
  },
  dump: async (pglite) => (await pglite.dumpDataDir('gzip')).arrayBuffer(),
  close: (pglite) => pglite.close(),
}

// In the order they came: each waits for the same opening, then PGlite runs them one at a time.
parentPort.on('message', async (message) => {
  const pglite = await opening
  // Failed to open: the service was told once, and fails every request itself.
  if (!pglite) return
  try {
    const result = await operations[message.op](pglite, message)
    parentPort.postMessage({ id: message.id, result }, result instanceof ArrayBuffer ? [result] : [])
  } catch (error) {
    parentPort.postMessage({ id: message.id, error: plain(error) })
  }
  // With its port closed and PGlite closed, the thread has nothing left to do and ends.
  if (message.op === 'close') parentPort.close()
})
