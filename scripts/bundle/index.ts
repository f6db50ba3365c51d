import { copyFile, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import { build, type Metafile, type Plugin } from 'esbuild'

/**
 * Bundles the server into ES modules in dist/ (dist/server.mjs and the chunks it imports), which
 * start far sooner than the compiled files (docs/performance-log.md): most of a start is spent
 * resolving and reading hundreds of modules one by one; and the operator commands (user, seed,
 * migrate, keys) into dist/cli.mjs, so that a build or the Docker image runs them with `node`
 * alone, without tsx or the TypeScript sources.
 *
 * What is imported with `await import()` goes into a chunk of its own (dist/chunks), read only when
 * first asked for: the service itself, after the entry has turned on Node's compile cache
 * (src/server.ts), and the packages only some settings need (src/runtime/on-demand; pg through
 * db/postgres.ts). Read from node_modules instead, the Redis client alone was a share of every
 * start on PostgreSQL (docs/performance-log.md).
 *
 * Left out of the bundle, loaded from node_modules as usual: packages that find their own files at
 * run time (PGlite's WebAssembly; the explorer is told where its files are, src/plugins/openapi.ts),
 * the S3 SDK (loaded when a bucket is configured; it is large and imports its own parts on demand)
 * and pg's optional native binding.
 *
 * The embedded database's thread (db/pglite-thread.mjs) is started from a file, and the FHIR
 * definitions are read from one, each found beside the code that reads it: each is copied next to
 * each output that holds that code.
 */
const EXTERNAL = ['@electric-sql/pglite', '@aws-sdk/*', 'pg-native']
/** Packages that must never be read on a start that does not ask for them (pg: only on PostgreSQL). */
export const ON_DEMAND = [
  '@aws-sdk/*',
  'ioredis',
  'nodemailer',
  'undici',
  'pg',
  'pg-pool',
  'pg-protocol',
  'pg-native',
]

// Run from source (npm run build uses tsx), so the project is two levels up.
const root = path.resolve(import.meta.dirname, '..', '..')

/** Files the code beside them reads at run time, by its own location: copied next to each output holding that code. */
const FILES_BESIDE_CODE = [
  // The embedded database's thread, started from its file.
  { code: 'db/pglite-thread-client.ts', file: 'db/pglite-thread.mjs' },
  // The FHIR definitions writes are validated against, read on the first write.
  {
    code: 'src/modules/fhir/validation/base-validator.ts',
    file: 'src/modules/fhir/validation/r4-definitions.json',
  },
]

async function placeFilesBesideCode(metafile: Metafile): Promise<void> {
  for (const { code, file } of FILES_BESIDE_CODE) {
    // esbuild names inputs and outputs relative to the working directory.
    const input = path.relative(process.cwd(), path.join(root, code))
    for (const [output, { inputs }] of Object.entries(metafile.outputs)) {
      if (!(input in inputs)) continue
      await copyFile(path.join(root, file), path.resolve(path.dirname(output), path.basename(file)))
    }
  }
}

// pg chooses its sockets when first loaded, by asking whether it runs on Cloudflare Workers: where
// there is no `navigator` (Node.js 20), it builds a fetch Response to find out, which loads Node's
// whole fetch implementation, on every start on PostgreSQL, for nothing (docs/performance-log.md).
// The bundle is for Node.js only, so it takes pg's Node.js sockets outright.
const PG_STREAM_CHOICE = 'const { getStream, getSecureStream } = getStreamFuncs()'
const pgNodeSockets: Plugin = {
  name: 'pg-node-sockets',
  setup(build) {
    build.onLoad({ filter: /[\\/]pg[\\/]lib[\\/]stream\.js$/ }, async ({ path: file }) => {
      const source = await readFile(file, 'utf8')
      if (!source.includes(PG_STREAM_CHOICE))
        throw new Error(`${file} no longer chooses its sockets as expected`)
      return {
        contents: source.replace(
          PG_STREAM_CHOICE,
          'const { getStream, getSecureStream } = getNodejsStreamFuncs()',
        ),
        loader: 'js',
      }
    })
  },
}

/** Bundles `entry` into `<outdir>/<name>.mjs` and its chunks; returns esbuild's account of the output. */
async function bundle(entry: string, name: string, outdir: string): Promise<Metafile> {
  const { metafile } = await build({
    entryPoints: { [name]: path.join(root, entry) },
    outdir,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    metafile: true,
    external: EXTERNAL,
    // Bundled CommonJS packages call require(), which an ES module does not define.
    banner: {
      js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
    },
    logLevel: 'warning',
    plugins: [pgNodeSockets],
  })
  await placeFilesBesideCode(metafile)
  return metafile
}

export const bundleServer = (outdir: string) => bundle('src/server.ts', 'server', outdir)

/** `node <outdir>/cli.mjs <user|seed|migrate|keys> …`: the operator commands, as `npm run <command>` runs them. */
export const bundleCli = (outdir: string) => bundle('scripts/cli/index.ts', 'cli', outdir)

if (process.argv[1] === import.meta.filename) {
  const dist = path.join(root, 'dist')
  // Chunks are named by their content: those of an earlier build would pile up.
  await rm(path.join(dist, 'chunks'), { recursive: true, force: true })
  await bundleServer(dist)
  await bundleCli(dist)
}
