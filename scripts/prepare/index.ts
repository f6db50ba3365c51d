import { prepareTemplate } from '../../db/embedded-template.js'

/**
 * Prepares the template a new embedded database is copied from (db/embedded-template.ts), so that
 * the first start skips initdb and the migrations. Run by `npm ci`/`npm install` (the `prepare`
 * script) and by `npm run build`; does nothing when the template is already there.
 */
const started = performance.now()
const { directory, created } = await prepareTemplate()
process.stdout.write(
  created
    ? `Prepared the embedded database template in ${Math.round(performance.now() - started)} ms: ${directory}\n`
    : `The embedded database template is ready: ${directory}\n`,
)
