import { describe, expect, it } from 'vitest'
import { processCpuMs } from '../../../scripts/bench/cpu.js'

describe("the benchmark's CPU time per request (scripts/bench/cpu.ts)", () => {
  it("reads a process's CPU time from /proc as Node.js itself counts it", () => {
    const before = processCpuMs(process.pid)
    const started = process.cpuUsage()
    const usedSince = () => {
      const { user, system } = process.cpuUsage(started)
      return user + system
    }
    let spun = 0
    // 200 ms of this process's own CPU time (µs), however busy the machine is.
    while (usedSince() < 200_000) spun += 1
    const used = processCpuMs(process.pid) - before
    expect(spun).toBeGreaterThan(0)
    // /proc counts in clock ticks (10 ms) and with the process's other threads (GC); a misread field or unit is off tenfold.
    expect(used).toBeGreaterThanOrEqual(150)
    expect(used).toBeLessThan(1000)
  })

  it('says so when the process is gone, rather than reading 0', () => {
    expect(() => processCpuMs(2 ** 22 + 1)).toThrow(/gone/)
  })
})
