import { isUtf8 } from 'node:buffer'
import { AppError } from '../../errors.js'

// DICOM files start with a 128-byte preamble and then "DICM"; no other signature needs more.
export const SNIFF_BYTES = 132

const startsWith = (head: Buffer, ...bytes: number[]) => bytes.every((byte, i) => head[i] === byte)

const SIGNATURES: Record<string, (head: Buffer) => boolean> = {
  'application/pdf': (head) => head.subarray(0, 5).toString('latin1') === '%PDF-',
  'image/png': (head) => startsWith(head, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a),
  'image/jpeg': (head) => startsWith(head, 0xff, 0xd8, 0xff),
  'image/tiff': (head) =>
    startsWith(head, 0x49, 0x49, 0x2a, 0x00) || startsWith(head, 0x4d, 0x4d, 0x00, 0x2a),
  'application/dicom': (head) => head.subarray(128, 132).toString('latin1') === 'DICM',
  // Text: no NUL byte and valid UTF-8 (a cut multi-byte character at the end is allowed).
  'text/plain': (head) => !head.includes(0) && isUtf8Prefix(head),
}

/** Valid UTF-8, allowing the last character to be cut off by the end of the sample. */
function isUtf8Prefix(bytes: Buffer): boolean {
  for (let cut = 0; cut < 4 && cut <= bytes.length; cut++) {
    if (isUtf8(bytes.subarray(0, bytes.length - cut))) return true
  }
  return false
}

const unsupported = (details: string) =>
  new AppError('VAL_001', details, { status: 415, message: 'Unsupported media type' })

export function checkDeclaredType(declared: string): void {
  if (!SIGNATURES[declared]) {
    throw unsupported(
      `Files of type ${declared} are not accepted; send one of ${Object.keys(SIGNATURES).join(', ')}`,
    )
  }
}

/** The file's first bytes must be what its declared type says (a renamed executable is not a PDF). */
export function checkSignature(declared: string, head: Buffer): void {
  if (!SIGNATURES[declared]?.(head)) throw unsupported(`The file's content is not ${declared}`)
}
