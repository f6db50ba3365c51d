import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'

/** What /proc counts CPU time in: clock ticks per second. */
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim())

interface ProcessStat {
  name: string
  parent: number
  /** User and system time, in ms. */
  cpuMs: number
  /** User and system time of its children that ended and were waited for, in ms. */
  endedChildrenCpuMs: number
}

/** A process's /proc/<pid>/stat; undefined once it is gone. */
function stat(pid: number | string): ProcessStat | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // The name is in parentheses and may hold spaces; the fields after it count from the state (0):
  // the parent is 1, utime and stime 11 and 12, cutime and cstime 13 and 14 (proc(5)).
  const fields = text
    .slice(text.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number)
  const ms = (ticks: number | undefined) => ((ticks ?? Number.NaN) * 1000) / TICKS_PER_SECOND
  return {
    name: text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')),
    parent: fields[1] ?? 0,
    cpuMs: ms(fields[11]) + ms(fields[12]),
    endedChildrenCpuMs: ms(fields[13]) + ms(fields[14]),
  }
}

/** CPU time a process has used so far, in ms. */
export function processCpuMs(pid: number): number {
  const found = stat(pid)
  if (!found) throw new Error(`process ${pid} is gone`)
  return found.cpuMs
}

/**
 * CPU time used so far by the PostgreSQL servers running on this machine, in ms (0 when the
 * database is elsewhere): every postgres process's own, and the postmaster's count of its children
 * that ended (a backend that closed, an autovacuum worker that finished), which otherwise would
 * take their share with them.
 */
export function postgresCpuMs(): number {
  const postgres = new Map<number, ProcessStat>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const found = stat(entry)
    if (found?.name.startsWith('postgres')) postgres.set(Number(entry), found)
  }
  let total = 0
  for (const process of postgres.values()) {
    total += process.cpuMs
    if (!postgres.has(process.parent)) total += process.endedChildrenCpuMs
  }
  return total
}
