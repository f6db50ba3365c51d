import { mkdtemp, rm } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { findChromium } from '../helpers/chromium.js'
import { createPatient, newOrganization, type TestUser } from '../helpers/factories.js'

// Without the background-networking flags Chromium keeps trying to reach Google's services; in a
// closed network those connections are refused and, worse, they are traffic beyond loopback.
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

let app: App
let baseUrl: string
let nurse: TestUser
let profile: string
let browser: BrowserContext
/** Requests the page tried to send anywhere but this server: refused, and the test fails on any. */
const offHost: string[] = []

beforeAll(async () => {
  app = await buildTestApp()
  await app.listen({ host: '127.0.0.1', port: 0 })
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  nurse = await (await newOrganization(app)).user('NURSE')
  await createPatient(app, nurse)
  profile = await mkdtemp(join(tmpdir(), 'ehr-chromium-'))
  const executablePath = findChromium()
  if (!executablePath) throw new Error('No Chromium found (the suite is collected only when there is one)')
  browser = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
  })
  await browser.route('**/*', (route) => {
    if (route.request().url().startsWith(`${baseUrl}/`)) return route.continue()
    offHost.push(route.request().url())
    return route.abort()
  })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await app?.close()
  if (profile) await rm(profile, { recursive: true, force: true })
})

describe('GET /swagger-ui.html in a real browser', () => {
  it('authorizes with a bearer token, executes GET /api/patients and renders the 200', async () => {
    const page = await browser.newPage()
    // Each step waits for what it needs (the document fetched, then rendered; a dialog; a response)
    // and only the test's own time bounds it: parsing and rendering the whole document takes
    // seconds of CPU, many more on a loaded machine.
    page.setDefaultTimeout(0)
    const documentFetched = page.waitForResponse(
      (response) => new URL(response.url()).pathname === '/swagger-ui/json' && response.ok(),
    )
    await page.goto(`${baseUrl}/swagger-ui.html`)
    await documentFetched
    const operation = page.locator('#operations-Patients-listPatients')
    await operation.waitFor({ state: 'visible' })
    await page.getByRole('button', { name: 'Authorize' }).first().click()
    const dialog = page.locator('.modal-ux')
    await dialog.locator('input').first().fill(nurse.token)
    await dialog.locator('button.authorize').click()
    await dialog.locator('.auth-container').filter({ hasText: 'Authorized' }).first().waitFor()
    await dialog.locator('button.btn-done').first().click()

    await operation.locator('.opblock-summary').first().click()
    await operation.getByRole('button', { name: 'Try it out' }).click()
    await operation.getByRole('button', { name: 'Execute' }).click()

    const live = operation.locator('.live-responses-table .response')
    const status = live.locator('.response-col_status').filter({ hasText: /\d{3}/ }).first()
    await status.waitFor()
    expect(await status.textContent()).toContain('200')
    const body = await live.locator('.response-col_description pre').first().textContent()
    expect(JSON.parse(body ?? '')).toMatchObject({ success: true, data: { totalElements: 1 } })
    expect(offHost).toEqual([])
  }, 60_000)
})
