/** What the chunks are handed to: pino's destination (sonic-boom), which deals with the file descriptor. */
interface Destination {
  write(chunk: string): unknown
  flushSync(): void
}

/**
 * Log lines gathered in memory and handed on in chunks of at least `chunkBytes` (counted in UTF-16
 * units, near enough): one write per chunk rather than per line. The destination's own buffering
 * is not used for this: it measures its whole pending buffer again on every line, which at a
 * useful chunk size cost more than the writes it saved.
 */
export function chunkedLog(destination: Destination, chunkBytes: number) {
  let lines: string[] = []
  let size = 0
  const flush = () => {
    if (size === 0) return
    const chunk = lines.join('')
    lines = []
    size = 0
    destination.write(chunk)
  }
  return {
    write(line: string) {
      lines.push(line)
      size += line.length
      if (size >= chunkBytes) flush()
    },
    /** Hands on what is gathered; the destination writes it without delay. */
    flush,
    /** Writes everything out before returning, for the last moments of the process. */
    flushSync() {
      flush()
      destination.flushSync()
    },
  }
}
