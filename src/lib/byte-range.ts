/** A span of bytes, both ends inclusive (as in a Range header). */
export interface ByteRange {
  start: number
  end: number
}

/**
 * The single byte range of a Range header (`bytes=a-b`, `bytes=a-`, `bytes=-n`), `undefined` for
 * none or one this server ignores (several ranges: the whole file is sent), or 'unsatisfiable'.
 */
export function parseRange(
  header: string | undefined,
  size: number,
): ByteRange | 'unsatisfiable' | undefined {
  const match = header?.match(/^bytes=(\d*)-(\d*)$/)
  if (!match) return undefined
  const [, from = '', to = ''] = match
  if (from === '' && to === '') return undefined
  let start: number
  let end: number
  if (from === '') {
    start = Math.max(0, size - Number(to))
    end = size - 1
  } else {
    start = Number(from)
    end = to === '' ? size - 1 : Math.min(Number(to), size - 1)
  }
  if (start >= size || start > end) return 'unsatisfiable'
  return { start, end }
}
