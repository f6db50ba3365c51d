import type { AddressInfo } from 'node:net'
import type { BrowserContext, Locator, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { openChromium, type TestBrowser } from '../helpers/chromium.js'
import { createPatient, newOrganization, type TestUser } from '../helpers/factories.js'

// How long the test waits for every operation of the document to be on the page. A bound, not a
// target: how fast the explorer renders is a figure for a benchmark, which a loaded CI machine
// would make a flaky assertion (it reports it below).
const RENDER_WAIT_MS = 90_000
// Each test's own bound: rendering the whole document takes seconds of CPU, many more on a machine
// running other suites at the same time.
const TEST_MS = 120_000

interface StartupTiming {
  /** When the last operation block was added, in ms since navigation start. */
  rendered: number
  /** When the page next had a moment without a long task: until then it answers no click. */
  idle: number
}

interface LongTask {
  startTime: number
  duration: number
}

/** What the probe uses of the page's globals: this file is compiled without the DOM's types. */
interface PageGlobals {
  document: {
    getElementsByClassName(name: string): { length: number }
    scrollingElement: { scrollTop: number; scrollHeight: number; clientHeight: number }
  }
  MutationObserver: new (
    callback: (records: unknown, observer: { disconnect(): void }) => void,
  ) => { observe(target: unknown, options: { childList: boolean; subtree: boolean }): void }
  PerformanceObserver: new (
    callback: (list: { getEntries(): LongTask[] }) => void,
  ) => { observe(options: { type: 'longtask'; buffered: boolean }): void }
  requestAnimationFrame(callback: () => void): number
  startupTiming?: StartupTiming
}

/**
 * Runs in the page before its own scripts and notes, in the page's own clock, when the operations
 * appear: every block, or, for a document of 150 tags and operations or more, the virtualized list
 * Swagger UI then renders (only the blocks near the viewport are on the page). Also when the page
 * is idle after that: right after rendering, Swagger UI normalizes the whole document again (to
 * resolve the security schemes) in one long task, whose length grows with the document's size.
 */
function probeStartup(operations: number) {
  const page = globalThis as unknown as PageGlobals
  const QUIET_MS = 200
  const longTasks: LongTask[] = []
  new page.PerformanceObserver((list) => {
    longTasks.push(...list.getEntries())
  }).observe({ type: 'longtask', buffered: true })
  const awaitIdle = (rendered: number) =>
    setTimeout(() => {
      const last = longTasks.at(-1)
      const busyUntil = last ? last.startTime + last.duration : 0
      if (performance.now() - busyUntil < QUIET_MS) return awaitIdle(rendered)
      page.startupTiming = { rendered, idle: Math.max(rendered, busyUntil) }
    }, QUIET_MS)
  const blocks = page.document.getElementsByClassName('opblock')
  const virtualList = page.document.getElementsByClassName('operations-virtual')
  new page.MutationObserver((_records, observer) => {
    if (blocks.length < operations && (virtualList.length === 0 || blocks.length === 0)) return
    observer.disconnect()
    awaitIdle(performance.now())
  }).observe(page.document, { childList: true, subtree: true })
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** The operation blocks Swagger UI shows for a document: one per tag of each operation, webhooks too. */
function operationBlocks(document: unknown): number {
  const { paths, webhooks } = document as Record<'paths' | 'webhooks', Record<string, object> | undefined>
  return [paths, webhooks]
    .flatMap((items) => Object.values(items ?? {}))
    .flatMap((item) => Object.entries(item).filter(([method]) => METHODS.includes(method)))
    .reduce(
      (count, [, operation]) => count + Math.max(1, (operation as { tags?: string[] }).tags?.length ?? 0),
      0,
    )
}

// Scrolling a virtualized list renders the blocks it reaches; a bound on the steps, not a target.
const MAX_SCROLL_STEPS = 1_000

/** After the page's next frame, when a virtualized list has rendered the rows it scrolled to. */
const nextFrame = (page: Page) =>
  page.evaluate(
    () =>
      new Promise((resolve) =>
        (globalThis as unknown as PageGlobals).requestAnimationFrame(() => setTimeout(resolve, 50)),
      ),
  )

/** Scrolls the page down a screen; whether it was at the bottom already. */
const scrolledDown = (page: Page) =>
  page.evaluate(() => {
    const scroller = (globalThis as unknown as PageGlobals).document.scrollingElement
    const atBottom = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1
    scroller.scrollTop += scroller.clientHeight
    return atBottom
  })

/**
 * The ids of the operation blocks the page renders, from the top to the bottom of the page: a
 * virtualized list holds only those near the viewport, so the page is scrolled a screen at a time.
 */
async function renderedOperations(page: Page): Promise<Set<string>> {
  const seen = new Set<string>()
  for (let step = 0; step < MAX_SCROLL_STEPS; step++) {
    for (const id of await page
      .locator('.opblock')
      .evaluateAll((blocks) => blocks.map((block) => block.id))) {
      seen.add(id)
    }
    if (await scrolledDown(page)) break
    await nextFrame(page)
  }
  return seen
}

/** Scrolls down until `target` is rendered: in a virtualized list a block is only near the viewport. */
async function scrolledTo(page: Page, target: Locator): Promise<void> {
  await page.locator('.opblock').first().waitFor({ state: 'visible' })
  for (let step = 0; step < MAX_SCROLL_STEPS && (await target.count()) === 0; step++) {
    if (await scrolledDown(page)) break
    await nextFrame(page)
  }
  await target.scrollIntoViewIfNeeded()
}

let app: App
let baseUrl: string
let nurse: TestUser
let chromium: TestBrowser
let browser: BrowserContext
let offHost: string[]

beforeAll(async () => {
  app = await buildTestApp()
  await app.listen({ host: '127.0.0.1', port: 0 })
  baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  nurse = await (await newOrganization(app)).user('NURSE')
  await createPatient(app, nurse)
  chromium = await openChromium([baseUrl])
  browser = chromium.context
  offHost = chromium.offHost
}, 60_000)
afterAll(async () => {
  await chromium?.close()
  await app?.close()
})

describe('GET /swagger-ui.html in a real browser', () => {
  it(
    'renders every operation of the document, compressed, fetching nothing from other hosts',
    async () => {
      // A first visit, whatever ran before: with routing on (beforeAll) Chromium caches nothing.
      const page = await browser.newPage()
      const operations = operationBlocks(app.swagger())
      await page.addInitScript(probeStartup, operations)
      const documentFetched = page.waitForResponse(
        (response) => new URL(response.url()).pathname === '/swagger-ui/json' && response.ok(),
      )
      await page.goto(`${baseUrl}/swagger-ui.html`)
      expect((await documentFetched).headers()['content-encoding']).toMatch(/^(br|gzip)$/)
      const probe = await page.waitForFunction(
        () => (globalThis as unknown as PageGlobals).startupTiming,
        undefined,
        { polling: 100, timeout: RENDER_WAIT_MS },
      )
      const timing = (await probe.jsonValue()) as StartupTiming
      console.info(
        `Swagger UI: ${operations} operations rendered at ${Math.round(timing.rendered)} ms, idle at ${Math.round(timing.idle)} ms`,
      )
      expect((await renderedOperations(page)).size).toBe(operations)
      expect(offHost).toEqual([])
      await page.close()
    },
    TEST_MS,
  )

  it(
    'authorizes with a bearer token, executes GET /api/patients and renders the 200',
    async () => {
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
      await page.getByRole('button', { name: 'Authorize' }).first().click()
      const dialog = page.locator('.modal-ux')
      await dialog.locator('input').first().fill(nurse.token)
      await dialog.locator('button.authorize').click()
      await dialog.locator('.auth-container').filter({ hasText: 'Authorized' }).first().waitFor()
      await dialog.locator('button.btn-done').first().click()

      // Found after the dialog: opening it scrolls to the top, where a virtualized list drops the block.
      const operation = page.locator('#operations-Patients-listPatients')
      await scrolledTo(page, operation)
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
    },
    TEST_MS,
  )
})
