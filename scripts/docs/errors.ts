import { ERRORS } from '../../src/errors.js'
import { code, generatedNotice, table } from './markdown.js'

interface ErrorEntry {
  status: number
  message: string
  statuses: readonly number[]
  when: string
}

/** docs/reference/errors.md: every error code with its statuses and when it is answered. */
export function errorsReference(errors: Record<string, ErrorEntry> = ERRORS): string {
  const rows = Object.entries(errors).map(([name, entry]) => [
    code(name),
    entry.statuses.map((status) => (status === entry.status ? `**${status}**` : String(status))).join(', '),
    entry.message,
    entry.when,
  ])
  return `${generatedNotice('`ERRORS` in src/errors.ts')}

# Errors

Every failure under \`/api\` answers the error envelope:

\`\`\`json
{ "success": false, "message": "Resource not found", "error": { "code": "RES_001", "details": "Patient not found" } }
\`\`\`

\`error.code\` is one of the codes below; \`message\` is the code's default message unless a more
specific one applies; \`details\` says what went wrong, naming the field or rule, never internals.
The status in bold is the code's usual one; the others are used in the cases "When" names.

${table(['Code', 'Statuses', 'Default message', 'When'], rows)}
`
}
