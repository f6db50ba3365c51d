import { describe, expect, it } from 'vitest'
import { firstStartBanner } from '../../../src/bootstrap.js'
import { loadConfig } from '../../../src/config.js'

const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64')
const databases = {
  'the embedded database': {},
  PostgreSQL: { DATABASE_URL: 'postgres://127.0.0.1:1/none', ENCRYPTION_KEY, MAIL_TRANSPORT: 'log' },
}

describe('the first start banner', () => {
  for (const [database, settings] of Object.entries(databases)) {
    it(`shows the password and where the API, explorer and metrics are, on ${database}`, () => {
      const config = loadConfig({ ...settings, PORT: '8181' })
      const banner = firstStartBanner(config, { email: 'admin@example.com', generatedPassword: 'pw-123' })
      expect(banner).toContain('Bootstrap administrator created: admin@example.com / pw-123')
      expect(banner).toMatch(/^ {2}API +http:\/\/localhost:8181\/api /m)
      expect(banner).toMatch(/^ {2}Explorer +http:\/\/localhost:8181\/swagger-ui\.html$/m)
      expect(banner).toMatch(/^ {2}Metrics +http:\/\/localhost:8181\/actuator\/prometheus$/m)
      expect(banner).toMatch(/^ {2}Demo data: .*npm run seed/m)
    })
  }

  it('tells how to load the demo beside the server on PostgreSQL, where the database is shared', () => {
    const config = loadConfig({ ...databases.PostgreSQL })
    const banner = firstStartBanner(config, { email: 'admin@example.com' })
    expect(banner).toContain('admin@example.com (password from ADMIN_PASSWORD)')
    expect(banner).not.toContain('stop the server')
  })
})
