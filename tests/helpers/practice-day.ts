import { walkPracticeDay } from '../../scripts/smoke/walk.js'
import type { App } from '../../src/app.js'
import { newOrganization, TEST_PASSWORD } from './factories.js'

/** What an app needs for the walk: the outbox worker, and webhooks to its receiver on loopback over plain HTTP. */
export const PRACTICE_DAY_ENVIRONMENT = {
  OUTBOX_WORKER: 'true',
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
}

/**
 * `npm run smoke`'s walk through a practice day, over HTTP at `baseUrl`, by a new organization's
 * ADMIN (also a PROVIDER), with its NURSE as the message's recipient.
 */
export async function walkNewPracticeDay(app: App, baseUrl: string) {
  const organization = await newOrganization(app)
  const admin = await organization.user('ADMIN', 'PROVIDER')
  const nurse = await organization.user('NURSE')
  const result = await walkPracticeDay({
    baseUrl,
    admin: { username: admin.email, password: TEST_PASSWORD },
    recipient: { username: nurse.email, password: TEST_PASSWORD },
    webhookTimeoutMs: 15_000,
  })
  return { organization, admin, result }
}
