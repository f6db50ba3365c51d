import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateOpenApiTypes } from '../../scripts/openapi-types/generate.js'
import { generateHeyApiSdk } from '../../scripts/openapi-types/sdk.js'
import { OPENAPI_DOCUMENT_FILE } from '../../scripts/openapi-types/write.js'
import type { App } from '../../src/app.js'
import { buildTestApp } from '../helpers/app.js'
import { newOrganization } from '../helpers/factories.js'

// Integrators generate clients from openapi.json with tools nobody tuned the document for. Two of
// them, openapi-typescript (with openapi-fetch) and @hey-api/openapi-ts (an SDK with its own fetch
// client), must give the document's named schemas as named types: a small program per generator
// (tests/fixtures/generated-clients) registers a patient and lists appointments with them, and
// must compile with the project's tsc, strict. The generators run from the scripts/openapi-types
// workspace, which has the TypeScript 5 compiler API they need.

const root = path.resolve(import.meta.dirname, '..', '..')
const fixtures = path.join(root, 'tests', 'fixtures', 'generated-clients')
const tsc = path.join(root, 'node_modules', '.bin', 'tsc')
const PROGRAMS = ['openapi-typescript', 'hey-api'] as const
type Program = (typeof PROGRAMS)[number]

// What the generated code needs, and the project's strictness: ESM with NodeNext resolution (hey-api
// reads this file to write `.js` import specifiers), Node's own fetch types, no emit.
const tsconfig = {
  compilerOptions: {
    target: 'ES2023',
    lib: ['ES2023'],
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    noUncheckedIndexedAccess: true,
    verbatimModuleSyntax: true,
    isolatedModules: true,
    skipLibCheck: true,
    types: ['node'],
    noEmit: true,
  },
  include: ['**/*.ts'],
}

let dir: string

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ehr-generated-clients-'))
  // The programs import openapi-fetch and use @types/node from the project's own packages.
  await symlink(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir')
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

interface Compiled {
  directory: string
  /** tsc's diagnostics by program; an empty list is a program that compiles. */
  errors: Record<Program, string[]>
  /** Any other diagnostic: in the generated code itself, or of tsc as a whole. */
  generatedErrors: string[]
}

/**
 * Generates both clients of the document into a folder of their own, puts each program beside its
 * client and compiles the lot with one run of tsc.
 */
async function generateAndCompile(document: object, name: string): Promise<Compiled> {
  const directory = path.join(dir, name)
  await mkdir(directory)
  await writeFile(path.join(directory, 'package.json'), JSON.stringify({ type: 'module' }))
  const tsconfigPath = path.join(directory, 'tsconfig.json')
  await writeFile(tsconfigPath, JSON.stringify(tsconfig, null, 2))

  // The options the project's own client is generated with.
  await writeFile(path.join(directory, 'openapi.ts'), await generateOpenApiTypes(document))
  await generateHeyApiSdk(document, path.join(directory, 'sdk'), { tsConfigPath: tsconfigPath })
  for (const program of PROGRAMS) {
    const source = await readFile(path.join(fixtures, `${program}.ts`), 'utf8')
    // The fixtures opt out of the project's typecheck with their first line; here they must compile.
    const [first, ...rest] = source.split('\n')
    if (!first?.startsWith('// @ts-nocheck')) throw new Error(`${program}.ts must start with // @ts-nocheck`)
    await writeFile(path.join(directory, `${program}.ts`), rest.join('\n'))
  }

  const { code, output } = await run(tsc, ['-p', tsconfigPath, '--pretty', 'false'], directory)
  const diagnostics = output.split('\n').filter((line) => /error TS\d+/.test(line))
  const errors = Object.fromEntries(
    PROGRAMS.map((program) => [program, diagnostics.filter((line) => line.startsWith(`${program}.ts(`))]),
  ) as Record<Program, string[]>
  const generatedErrors = diagnostics.filter((line) => !PROGRAMS.some((p) => errors[p].includes(line)))
  if (code !== 0 && diagnostics.length === 0) generatedErrors.push(`tsc exited with ${code}: ${output}`)
  return { directory, errors, generatedErrors }
}

/** Runs a command to its end (bounded) and gives its exit code and output. */
function run(
  command: string,
  args: string[],
  cwd: string,
  timeoutMs = 60_000,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs })
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
    })
    child.stderr.on('data', (chunk) => {
      output += chunk
    })
    child.once('error', reject)
    child.once('close', (code, signal) => {
      if (signal) reject(new Error(`${command} ended by ${signal}:\n${output}`))
      else resolve({ code, output })
    })
  })
}

let committed: Promise<Compiled> | undefined
/** The clients of the committed openapi.json, generated and compiled once for the tests below. */
const compiledCommitted = async () => {
  committed ??= readFile(OPENAPI_DOCUMENT_FILE, 'utf8').then((text) =>
    generateAndCompile(JSON.parse(text), 'committed'),
  )
  return committed
}

describe('clients generated from openapi.json by independent generators', () => {
  it('openapi-typescript: the program compiles against the named schemas', async () => {
    const { errors, generatedErrors } = await compiledCommitted()

    expect(generatedErrors).toEqual([])
    expect(errors['openapi-typescript']).toEqual([])
  })

  it('@hey-api/openapi-ts: the program compiles against the named types of the SDK', async () => {
    const { errors, generatedErrors } = await compiledCommitted()

    expect(generatedErrors).toEqual([])
    expect(errors['hey-api']).toEqual([])
  })

  it('both programs stop compiling, naming it, when the document has no schema called Patient', async () => {
    const document = JSON.parse(await readFile(OPENAPI_DOCUMENT_FILE, 'utf8'))
    const schemas = document.components?.schemas ?? {}
    // The same shape under another name: only the name integrators rely on is gone.
    const renamed = JSON.parse(
      JSON.stringify({
        ...document,
        components: {
          ...document.components,
          schemas: Object.fromEntries(
            Object.entries(schemas).map(([name, schema]) => [
              name === 'Patient' ? 'PatientRecord' : name,
              schema,
            ]),
          ),
        },
      }).replaceAll('"#/components/schemas/Patient"', '"#/components/schemas/PatientRecord"'),
    )

    const { errors, generatedErrors } = await generateAndCompile(renamed, 'renamed')

    expect(generatedErrors).toEqual([])
    for (const program of PROGRAMS) {
      expect(errors[program]).not.toEqual([])
      // Only Patient is missing (not PatientCreate, PatientEnvelope…).
      for (const error of errors[program]) expect(error).toMatch(/'Patient'/)
    }
  })
})

describe('the generated programs against the service', () => {
  let app: App
  let baseUrl: string

  beforeAll(async () => {
    app = await buildTestApp()
    await app.listen({ host: '127.0.0.1', port: 0 })
    baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await app?.close()
  })

  it.each(PROGRAMS)('%s: registers a patient and lists their appointments', async (program) => {
    const { directory } = await compiledCommitted()
    const organization = await newOrganization(app)
    const desk = await organization.user('FRONT_DESK')
    const { registerAndListAppointments } = await import(
      pathToFileURL(path.join(directory, `${program}.ts`)).href
    )

    const result = await registerAndListAppointments(baseUrl, desk.token)

    expect(result).toEqual({
      patient: expect.objectContaining({
        id: expect.any(Number),
        identification: expect.objectContaining({ lastName: 'Hopper', dateOfBirth: '1906-12-09' }),
      }),
      appointments: expect.objectContaining({ content: [], totalElements: 0 }),
    })
  })
})
