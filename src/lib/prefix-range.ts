const MAX_CODE_POINT = 0x10ffff
const SURROGATES_START = 0xd800
const SURROGATES_END = 0xdfff

/**
 * The least string greater than every string that begins with `prefix`, in code-point order (the
 * byte order of UTF-8, so of collation "C"); undefined when no such string exists. With it, "begins
 * with" becomes a key range: `value >= prefix and value < prefixEnd(prefix)`.
 */
export function prefixEnd(prefix: string): string | undefined {
  const codePoints = [...prefix]
  while (codePoints.length > 0) {
    const last = (codePoints.pop() as string).codePointAt(0) as number
    if (last < MAX_CODE_POINT) {
      const next = last + 1 === SURROGATES_START ? SURROGATES_END + 1 : last + 1
      return codePoints.join('') + String.fromCodePoint(next)
    }
  }
  return undefined
}
