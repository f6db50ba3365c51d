import { mkdir } from 'node:fs/promises'
import { chromium } from 'playwright-core'
import { scopeInWords } from '../../src/modules/smart-launch/granted-scopes.js'
import type { FormContext } from '../../src/modules/smart-launch/pages.js'
import {
  consentPage,
  errorPage,
  passwordChangePage,
  pickerPage,
  signInPage,
} from '../../src/modules/smart-launch/pages.js'
import { CHROMIUM_FLAGS, findChromium } from '../lib/chromium.js'

// The pictures of the sign-in and consent pages in docs/smart.md: each page as the service renders
// it (the same functions build both), shown in Chromium. Run again after changing a page:
// `npm run docs:pictures`.

const OUT_DIR = new URL('../../docs/images/', import.meta.url)

const context: FormContext = {
  action: '/realms/ehr/protocol/openid-connect/auth',
  parameters: { client_id: 'app-3f9c2a', response_type: 'code' },
  csrf: 'csrf',
}

const pages: Record<string, string> = {
  'smart-sign-in': signInPage(context, { appName: 'Chart Viewer' }),
  'smart-password': passwordChangePage(context, { username: 'ada@example.com' }),
  'smart-consent': consentPage(context, {
    appName: 'Chart Viewer',
    access: ['openid', 'fhirUser', 'offline_access', 'patient/Patient.rs', 'patient/Observation.rs'].map(
      scopeInWords,
    ),
    patient: 'Ada Lovelace',
  }),
  'smart-patient-picker': pickerPage(context, {
    appName: 'Chart Viewer',
    terms: { name: 'love', birthDate: '', mrn: '' },
    found: {
      patients: [
        { id: 1, name: 'Ada Lovelace', birthDate: '1984-12-10', mrn: 'MRN-000123' },
        { id: 2, name: 'Byron Lovell', birthDate: '1971-01-22', mrn: 'MRN-000456' },
      ],
      total: 2,
      limit: 20,
    },
  }),
  'smart-error': errorPage('Cannot continue', 'The redirect URI is not one the app registered.'),
}

const executablePath = findChromium()
if (!executablePath) throw new Error('No Chromium found: install Debian’s chromium, or set CHROMIUM_PATH')
const browser = await chromium.launch({ executablePath, args: CHROMIUM_FLAGS })
try {
  await mkdir(OUT_DIR, { recursive: true })
  const page = await browser.newPage({ viewport: { width: 720, height: 560 } })
  for (const [name, markup] of Object.entries(pages)) {
    await page.setContent(markup)
    const path = new URL(`${name}.png`, OUT_DIR)
    await page.screenshot({ path: path.pathname, fullPage: true })
    console.log(`wrote docs/images/${name}.png`)
  }
} finally {
  await browser.close()
}
