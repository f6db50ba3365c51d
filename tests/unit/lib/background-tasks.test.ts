import { AsyncLocalStorage } from 'node:async_hooks'
import { describe, expect, it } from 'vitest'
import { BackgroundTasks } from '../../../src/lib/background-tasks.js'

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('BackgroundTasks', () => {
  it('runs a task without the caller waiting, and settled() waits for it', async () => {
    const tasks = new BackgroundTasks(() => {})
    let done = false
    tasks.run('slow', async () => {
      await tick(30)
      done = true
    })
    expect(done).toBe(false)
    await tasks.settled()
    expect(done).toBe(true)
  })

  it('runs a task outside the context of the request that started it', async () => {
    const request = new AsyncLocalStorage<string>()
    const tasks = new BackgroundTasks(() => {})
    const seen: (string | undefined)[] = []
    request.run('request 1', () => tasks.run('sees', async () => void seen.push(request.getStore())))
    await tasks.settled()
    expect(seen).toEqual([undefined])
  })

  it('hands a failure, thrown or rejected, to onError with the task name', async () => {
    const failures: [string, unknown][] = []
    const tasks = new BackgroundTasks((name, error) => failures.push([name, error]))
    const problem = new Error('boom')
    tasks.run('rejects', async () => {
      throw problem
    })
    tasks.run('throws', () => {
      throw problem
    })
    await tasks.settled()
    expect(failures.sort(([a], [b]) => a.localeCompare(b))).toEqual([
      ['rejects', problem],
      ['throws', problem],
    ])
  })

  it('settled() also waits for tasks started while it waits', async () => {
    const tasks = new BackgroundTasks(() => {})
    let inner = false
    tasks.run('outer', async () => {
      await tick(10)
      tasks.run('inner', async () => {
        await tick(20)
        inner = true
      })
    })
    await tasks.settled()
    expect(inner).toBe(true)
  })
})
