import pino from 'pino'
import { describe, expect, it, vi } from 'vitest'
import { lazyChildLoggers } from '../../../src/runtime/lazy-child-logger.js'

function capturedLogger() {
  const lines: Record<string, unknown>[] = []
  const logger = pino(
    { redact: { paths: ['*.password'], censor: '[redacted]' } },
    { write: (line: string) => lines.push(JSON.parse(line)) },
  )
  return { logger, lines }
}

describe('lazy per-request child loggers', () => {
  it('make no pino child until a request logs, then log with its id and the parent’s redaction', () => {
    const { logger, lines } = capturedLogger()
    const makeChild = vi.spyOn(logger, 'child')
    const requestLog = lazyChildLoggers.call(
      undefined as never,
      logger,
      { reqId: 'req-1' },
      {},
      undefined as never,
    )
    expect(makeChild).not.toHaveBeenCalled()
    expect(requestLog.level).toBe('info')

    requestLog.error({ body: { password: 'hunter2' } }, 'failed')
    requestLog.debug('below the level')
    expect(makeChild).toHaveBeenCalledTimes(1)
    expect(lines).toEqual([
      expect.objectContaining({ reqId: 'req-1', body: { password: '[redacted]' }, msg: 'failed', level: 50 }),
    ])

    requestLog.child({ step: 'two' }).warn('again')
    expect(lines[1]).toMatchObject({ reqId: 'req-1', step: 'two', msg: 'again' })
  })
})
