import { readFile, writeFile } from 'node:fs/promises'

/**
 * Replaces the section headed `## <heading>` of BENCHMARKS.md with `section` (which starts with
 * that heading), or appends it: each benchmark command owns its own section.
 */
export async function writeBenchmarkSection(heading: string, section: string, file = 'BENCHMARKS.md') {
  const existing = await readFile(file, 'utf8').catch(() => '# Benchmarks\n\n')
  const parts = existing.split(/^(?=## )/m)
  const at = parts.findIndex((part) => part.startsWith(`## ${heading}\n`))
  const body = `${section.trimEnd()}\n\n`
  if (at < 0) parts.push(body)
  else parts[at] = body
  const text = parts.map((part) => (part.endsWith('\n\n') ? part : `${part.trimEnd()}\n\n`)).join('')
  await writeFile(file, `${text.trimEnd()}\n`)
}
