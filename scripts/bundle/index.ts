import path from 'node:path'
import { build } from 'esbuild'

/**
 * Bundles the server into one ES module (dist/server.mjs), which starts in about half the time of
 * the compiled files: most of a start is spent resolving and reading some 400 modules one by one;
 * and the operator commands (user, seed, migrate, keys) into another (dist/cli.mjs), so that a
 * build or the Docker image runs them with `node` alone, without tsx or the TypeScript sources.
 *
 * Left out of the bundle, loaded from node_modules as usual: packages that find their own files at
 * run time (PGlite's WebAssembly; the explorer is told where its files are, src/plugins/openapi.ts)
 * and packages loaded only when a setting asks for them (S3, Redis, SMTP, an external identity
 * provider, webhook delivery).
 */
const FINDING_THEIR_FILES = ['@electric-sql/pglite']
/**
 * Imported with `await import()` where a setting needs them, never statically: a static import of
 * an external package is loaded on every start (the S3 SDK alone took about 50 ms of each).
 */
export const ON_DEMAND = ['@aws-sdk/*', 'ioredis', 'nodemailer', 'undici', 'pg-native']
const EXTERNAL = [...FINDING_THEIR_FILES, ...ON_DEMAND]

// Run from source (npm run build uses tsx), so the project is two levels up.
const root = path.resolve(import.meta.dirname, '..', '..')

async function bundle(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [path.join(root, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    external: EXTERNAL,
    // Bundled CommonJS packages call require(), which an ES module does not define.
    banner: {
      js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);",
    },
    logLevel: 'warning',
  })
}

export const bundleServer = (outfile: string) => bundle('src/server.ts', outfile)

/** `node <outfile> <user|seed|migrate|keys> …`: the operator commands, as `npm run <command>` runs them. */
export const bundleCli = (outfile: string) => bundle('scripts/cli/index.ts', outfile)

if (process.argv[1] === import.meta.filename) {
  await bundleServer(path.join(root, 'dist', 'server.mjs'))
  await bundleCli(path.join(root, 'dist', 'cli.mjs'))
}
