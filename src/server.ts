import module from 'node:module'

// On Node.js 22 and later (the image ships 24), V8 keeps the code it compiles for the service in a
// cache (in the system's temporary directory, or where NODE_COMPILE_CACHE says), so that a start
// reads it instead of compiling the bundle and its packages again (cold starts: BENCHMARKS.md).
// It holds for what is imported after this line, hence the service in a module of its own.
;(module as { enableCompileCache?: () => unknown }).enableCompileCache?.()
// The embedded database's boot, the longest step of a start, begins before the service is read;
// a start on PostgreSQL does not even read how.
if (!process.env.DATABASE_URL) (await import('./open-ahead.js')).openDatabaseAhead(process.env)
await import('./start.js')
