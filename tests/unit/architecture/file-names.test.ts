import { describe, expect, it } from 'vitest'
import { serviceSources } from '../../helpers/import-rules.js'

// Files every area has, and folders holding one file per topic (an area's schemas, its tables, its
// settings, its plugin): the folder says which kind a file is. Elsewhere a name says what a file does.
const AREA_FILES = new Set(['routes.ts', 'service.ts', 'queries.ts', 'mapper.ts', 'index.ts'])
const TOPIC_FOLDERS = ['schemas/', 'db/tables/', 'db/migrations/', 'src/config/', 'src/plugins/']

/** Basenames that more than one source file has, outside those conventions, with the files. */
function repeatedNames(files: Iterable<string>): Record<string, string[]> {
  const byName = new Map<string, string[]>()
  for (const file of files) {
    const name = file.slice(file.lastIndexOf('/') + 1)
    if (AREA_FILES.has(name) || TOPIC_FOLDERS.some((folder) => file.startsWith(folder))) continue
    byName.set(name, [...(byName.get(name) ?? []), file])
  }
  return Object.fromEntries([...byName].filter(([, paths]) => paths.length > 1))
}

describe('source file names', () => {
  it('are not repeated outside the per-area and per-topic conventions', () => {
    expect(repeatedNames(serviceSources().keys())).toEqual({})
  })

  it('catch a name repeated in two folders, and leave the conventions alone', () => {
    const files = [
      'src/http/principal.ts',
      'src/identity/principal.ts',
      'src/modules/patients/routes.ts',
      'src/modules/users/routes.ts',
      'schemas/patients.ts',
      'db/tables/patients.ts',
    ]
    expect(repeatedNames(files)).toEqual({
      'principal.ts': ['src/http/principal.ts', 'src/identity/principal.ts'],
    })
  })
})
