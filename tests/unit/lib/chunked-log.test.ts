import { describe, expect, it } from 'vitest'
import { chunkedLog } from '../../../src/runtime/chunked-log.js'

function recordingDestination() {
  const chunks: string[] = []
  let syncFlushes = 0
  return {
    chunks,
    syncFlushes: () => syncFlushes,
    write: (chunk: string) => chunks.push(chunk),
    flushSync: () => {
      syncFlushes++
    },
  }
}

describe('the chunked log', () => {
  it('hands lines on together once a chunk is full, in order and whole', () => {
    const destination = recordingDestination()
    const log = chunkedLog(destination, 30)
    log.write('{"msg":"one"}\n')
    expect(destination.chunks).toEqual([])
    log.write('{"msg":"two"}\n')
    log.write('{"msg":"three"}\n')
    expect(destination.chunks).toEqual(['{"msg":"one"}\n{"msg":"two"}\n{"msg":"three"}\n'])
    log.write('{"msg":"four"}\n')
    expect(destination.chunks).toHaveLength(1)
  })

  it('hands on a partial chunk when flushed, and nothing when there is nothing', () => {
    const destination = recordingDestination()
    const log = chunkedLog(destination, 1000)
    log.flush()
    expect(destination.chunks).toEqual([])
    log.write('a\n')
    log.flush()
    log.write('b\n')
    log.flushSync()
    expect(destination.chunks).toEqual(['a\n', 'b\n'])
    expect(destination.syncFlushes()).toBe(1)
  })
})
