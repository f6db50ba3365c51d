/** A cell's text with the characters that would end a table cell or row escaped. */
const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** A GitHub-flavoured Markdown table, one line per row, cells unpadded so that diffs stay small. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.map(cell).join(' | ')} |`
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n')
}

/** Inline code; a value holding a backtick is fenced with two. */
export const code = (text: string) => (text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``)

/** What every generated file says first: where it comes from and how to regenerate it. */
export const generatedFrom = (source: string) =>
  `Generated from ${source} by \`npm run docs\`. Do not edit: change the source and run it again.`

/** The first line of every generated page. */
export const generatedNotice = (source: string) => `<!-- ${generatedFrom(source)} -->`
