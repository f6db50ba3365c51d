import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'

/** Where the generated types of the API live; scripts/client builds the typed client on them. */
export const OPENAPI_TYPES_FILE = 'scripts/client/openapi.d.ts'

const HEADER = `/**
 * Generated from openapi.json by openapi-typescript (npm run openapi). Do not edit: a test fails
 * when this file differs from a fresh one.
 */

`

/** The TypeScript description of every path, operation and schema of the document. */
export async function generateOpenApiTypes(document: object): Promise<string> {
  const ast = await openapiTS(document as OpenAPI3, {
    silent: true,
    alphabetize: true,
    // A parameter or field with a default may be left out by the caller.
    defaultNonNullable: false,
  })
  return HEADER + astToString(ast)
}
