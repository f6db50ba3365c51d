import { configurationReference } from './configuration.js'
import { envExample } from './env-example.js'
import { errorsReference } from './errors.js'
import { rolesReference } from './roles.js'

export interface ReferenceFile {
  /** Relative to the repository root. */
  path: string
  content: string
}

/** The files generated from the code (reference pages and `.env.example`), as they should be committed. */
export function referenceFiles(): ReferenceFile[] {
  return [
    { path: 'docs/reference/configuration.md', content: configurationReference() },
    { path: 'docs/reference/roles.md', content: rolesReference() },
    { path: 'docs/reference/errors.md', content: errorsReference() },
    { path: '.env.example', content: envExample() },
  ]
}
