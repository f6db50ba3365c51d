import type { Agent } from 'undici'

/**
 * undici, loaded on first use: it takes a good part of start-up time, and most instances send no
 * webhook and call no identity provider in their first moments (many never call one).
 */
let loaded: Promise<typeof import('./on-demand/undici.js')> | undefined

const loadUndici = () => {
  loaded ??= import('./on-demand/undici.js')
  return loaded
}

/** An undici agent with `options`, made on first use together with the module. */
export function lazyAgent(options: Agent.Options) {
  let agent: Agent | undefined
  return {
    async client() {
      const { Agent, request } = await loadUndici()
      agent ??= new Agent(options)
      return { agent, request }
    },
    close: async () => agent?.close(),
  }
}
