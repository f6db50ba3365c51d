import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** What /proc counts CPU time in: clock ticks per second. */
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

/** The name and CPU time (user + system, ms) of a process from /proc/<pid>/stat; undefined once it is gone. */
function stat(pid: number | string): { name: string; cpuMs: number } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The name is in parentheses and may hold spaces; utime and stime are the 12th and 13th fields after it.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return {
    name: text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')),
    cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND,
  }
}

/** CPU time a process has used so far, in ms. */
export function processCpuMs(pid: number): number {
  const found = stat(pid)
  if (!found) throw new Error(`process ${pid} is gone`)
  return found.cpuMs
}

/**
 * CPU time used so far by the PostgreSQL server processes running on this machine, in ms: 0 when
 * the database is elsewhere. A backend that ends between two readings takes its share with it, so
 * the benchmark reads this around a load that keeps its connections open.
 */
export function postgresCpuMs(): number {
  let total = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const found = stat(entry)
    if (found?.name.startsWith('postgres')) total += found.cpuMs
  }
  return total
}
