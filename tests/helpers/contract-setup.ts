import { afterEach, expect } from 'vitest'
import { drainViolations } from './contract.js'

// Every response any test receives must match the OpenAPI document.
afterEach(() => {
  expect(drainViolations()).toEqual([])
})
