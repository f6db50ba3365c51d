import { createClient } from '@hey-api/openapi-ts'

export interface HeyApiSdkOptions {
  /**
   * The tsconfig the SDK is compiled with: hey-api reads its module resolution to choose import
   * specifiers (`./client/index.js` under NodeNext). Without it hey-api looks for one upwards of
   * the working directory, so the output would depend on where it runs.
   */
  tsConfigPath: string
}

/**
 * Writes an SDK of the document with @hey-api/openapi-ts into `outputDirectory` (emptied first): a
 * named type per `components.schemas` entry and per operation's data, responses and errors
 * (`types.gen.ts`), a function per operation (`sdk.gen.ts`), and its fetch client, copied from the
 * generator's package into `client/` and `core/` so the output imports no package at all. Nothing
 * is fetched: the document is passed parsed, and with logs silent hey-api neither writes a crash
 * log nor offers to open an issue.
 *
 * An independent check of the document rather than the project's client (which openapi-typescript
 * and openapi-fetch make, scripts/client): what integrators generate must compile and be named.
 */
export async function generateHeyApiSdk(
  document: object,
  outputDirectory: string,
  options: HeyApiSdkOptions,
): Promise<void> {
  await createClient({
    input: document as Record<string, unknown>,
    output: {
      path: outputDirectory,
      clean: true,
      format: false,
      lint: false,
      tsConfigPath: options.tsConfigPath,
    },
    plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
    logs: { level: 'silent', file: false },
    interactive: false,
  })
}
