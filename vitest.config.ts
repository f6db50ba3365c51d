import { defineConfig } from 'vitest/config'

// Tests under tests/postgres need a real server (concurrency, outages); they run when
// TEST_DATABASE_URL is set, as CI does, and are not collected otherwise.
const include = ['tests/{unit,api,process}/**/*.test.ts']
if (process.env.TEST_DATABASE_URL) include.push('tests/postgres/**/*.test.ts')
// Tests under tests/redis need a Redis server (TEST_REDIS_URL), as CI provides.
if (process.env.TEST_REDIS_URL) include.push('tests/redis/**/*.test.ts')

export default defineConfig({
  test: {
    include,
    globalSetup: ['tests/helpers/global-setup.ts'],
    setupFiles: ['tests/helpers/contract-setup.ts'],
    pool: 'forks',
    // Each worker holds one embedded database (~250 MB); two match the two cores here.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
