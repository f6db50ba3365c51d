import { describe, expect, it } from 'vitest'
import { ruleViolations, serviceSources } from '../../helpers/import-rules.js'

describe('dependency rules of the source tree', () => {
  it('are kept: imports go down the layers, areas meet through services, nothing is circular', () => {
    expect(ruleViolations(serviceSources())).toEqual([])
  })

  it('catch infrastructure importing an area, an area reading another area’s queries, and cycles', () => {
    const tree = new Map([
      ['src/plugins/auth.ts', "import { login } from '../modules/auth/service.js'"],
      ['src/modules/auth/service.ts', 'export const login = 1'],
      ['src/modules/encounters/service.ts', "import { findAppointment } from '../appointments/queries.js'"],
      ['src/modules/appointments/queries.ts', "import type { Db } from '../../../db/database.js'"],
      ['db/database.ts', 'export type Db = unknown'],
      ['src/identity/signing-keys.ts', "import type { TokenIssuer } from './token-issuer.js'"],
      ['src/identity/token-issuer.ts', "import { TTL } from './signing-keys.js'"],
      ['src/modules/providers/service.ts', "import { book } from '../appointments/service.js'"],
      ['src/modules/appointments/service.ts', "import { hours } from '../providers/service.js'"],
    ])
    expect(ruleViolations(tree)).toEqual([
      'src/plugins/auth.ts imports src/modules/auth/service.ts, a higher layer',
      'src/modules/encounters/service.ts imports src/modules/appointments/queries.ts: another area is reached only through its service.ts',
      'import cycle between files: src/identity/signing-keys.ts, src/identity/token-issuer.ts',
      'import cycle between files: src/modules/appointments/service.ts, src/modules/providers/service.ts',
      'import cycle between folders: src/modules/appointments, src/modules/providers',
    ])
  })
})
