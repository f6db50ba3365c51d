import { spawnSync } from 'node:child_process'
import { defineConfig } from 'vitest/config'
import { findChromium } from './scripts/lib/chromium.js'

// Tests under tests/postgres need a real server (concurrency, outages); they run when
// TEST_DATABASE_URL is set, as CI does, and are not collected otherwise. Tests under tests/process
// start the real server on its embedded database whatever TEST_DATABASE_URL says, so they run in
// the embedded pass only. Unit tests, the API's tests (a folder per area) and the database layer's
// tests run in every pass.
const include = ['tests/{unit,api,database}/**/*.test.ts']
if (process.env.TEST_DATABASE_URL) include.push('tests/postgres/**/*.test.ts')
else include.push('tests/process/**/*.test.ts')
// Tests under tests/redis need a Redis server (TEST_REDIS_URL), as CI provides.
if (process.env.TEST_REDIS_URL) include.push('tests/redis/**/*.test.ts')
// Tests under tests/promtool check the metrics with Prometheus's own promtool (Debian package
// `prometheus`), collected only where promtool is on PATH, as CI makes sure it is.
if (spawnSync('promtool', ['--version']).status === 0) include.push('tests/promtool/**/*.test.ts')
// Tests under tests/browser drive the system's Chromium (Debian's `chromium`, or CHROMIUM_PATH);
// they are collected only where there is one, as CI installs it, and in the embedded pass only:
// what they check does not depend on the database, and a browser is the slowest thing we start.
if (findChromium() && !process.env.TEST_DATABASE_URL) include.push('tests/browser/**/*.test.ts')
// Tests under tests/contract-tools check the document with independent tools (client generators,
// the Prism proxy); what they check does not depend on the database, so they run in the embedded
// pass only.
if (!process.env.TEST_DATABASE_URL) include.push('tests/contract-tools/**/*.test.ts')

export default defineConfig({
  test: {
    include,
    globalSetup: ['tests/helpers/global-setup.ts'],
    setupFiles: ['tests/helpers/contract-setup.ts'],
    pool: 'forks',
    // Test files share a worker's module cache (each still builds its own app and database):
    // loading the service's modules once per worker instead of once per file saves about a minute.
    isolate: false,
    // Each worker holds one embedded database (~250 MB); two match the two cores here.
    maxWorkers: 2,
    // Bounds, not waits: a test waits for what it needs (a response, a row, a delivery). Five times
    // vitest's defaults, because a loaded CI machine runs the slowest tests (fuzzing every
    // operation, a browser, real server processes) several times slower than a quiet one; hooks
    // open a database and may start servers.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
