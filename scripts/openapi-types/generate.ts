import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript'

/** The TypeScript description of every path, operation and schema of the document. */
export async function generateOpenApiTypes(document: object): Promise<string> {
  const ast = await openapiTS(document as OpenAPI3, {
    silent: true,
    alphabetize: true,
    // A parameter or field with a default may be left out by the caller.
    defaultNonNullable: false,
  })
  return astToString(ast)
}
