import type { Success } from './deliveries.js'

// One statement per batch keeps the statement's size and lock count modest.
const MAX_BATCH = 500

interface Waiting {
  success: Success
  resolve: () => void
  reject: (error: unknown) => void
}

/**
 * Group commit for successful attempts: those that succeed while a batch is being written go
 * together into the next one, so the number of writes follows the database's pace, not the
 * receivers'. Each caller learns when its own attempt is recorded (or that recording failed).
 */
export class SuccessBatch {
  private waiting: Waiting[] = []
  private writing: Promise<void> | undefined

  constructor(private readonly write: (batch: Success[]) => Promise<void>) {}

  add(success: Success): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ success, resolve, reject })
      this.writing ??= this.writeAll()
    })
  }

  private async writeAll(): Promise<void> {
    // Answers read in the same turn of the event loop share the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve))
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, MAX_BATCH)
      try {
        await this.write(batch.map(({ success }) => success))
        for (const { resolve } of batch) resolve()
      } catch (error) {
        for (const { reject } of batch) reject(error)
      }
    }
    this.writing = undefined
  }
}
