import { isIP } from 'node:net'
import type { StoredJwks } from '../../../db/tables/clients.js'
import { TtlCache } from '../../lib/ttl-cache.js'
import { allowedAddresses, checkUrlShape, guardedConnector, type TargetPolicy } from '../../outbox/targets.js'
import { lazyAgent } from '../../runtime/lazy-undici.js'
import { usableKeys } from './keys.js'

// A client's keys change rarely; five minutes bounds how long a withdrawn key keeps working.
const CACHE_MS = 5 * 60_000
// An unknown kid fetches again (the client may have just rotated), but no more often than this per
// URL: a stream of made-up kids must not turn this service into a load generator against the URL.
const REFRESH_INTERVAL_MS = 10_000
// A token request waits for the fetch; a slow or silent host must not hold it for long.
const TIMEOUT_MS = 5000
const MAX_BYTES = 64 * 1024
const MAX_URLS = 1000
const USER_AGENT = 'ehr-service-jwks/0.1'

/** The key set at a client's JWKS URL could not be fetched or used; says nothing of why to the caller. */
export class KeySetUnavailable extends Error {}

export interface JwksFetcher {
  /** The usable keys published at `url`: cached for a few minutes, fetched when not. */
  get(url: string): Promise<StoredJwks>
  /** Fetches again (an unknown kid); undefined when that was done for `url` moments ago. */
  refresh(url: string): Promise<StoredJwks | undefined>
  close(): Promise<void>
}

async function readLimited(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    // Leaving the loop destroys the body (and its connection).
    if (size > MAX_BYTES) throw new KeySetUnavailable('key set too large')
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * Fetches clients' published key sets under the same address policy as webhook deliveries: the
 * URL's shape is checked, and connections go only to addresses the policy allows (checked at
 * connect time, so a DNS answer that changes after registration cannot reach an internal host).
 * Redirects are not followed. Concurrent requests for one URL share one fetch.
 */
export function createJwksFetcher(policy: TargetPolicy): JwksFetcher {
  const agent = lazyAgent({
    connect: guardedConnector(policy, { timeoutMs: TIMEOUT_MS }),
    headersTimeout: TIMEOUT_MS,
    bodyTimeout: TIMEOUT_MS,
    keepAliveTimeout: 4000,
  })
  const cache = new TtlCache<string, StoredJwks>(CACHE_MS, MAX_URLS)
  const refreshed = new TtlCache<string, true>(REFRESH_INTERVAL_MS, MAX_URLS)
  const inFlight = new Map<string, Promise<StoredJwks>>()

  async function download(url: string): Promise<StoredJwks> {
    try {
      const target = checkUrlShape(url, policy)
      // Names are checked by the connection's lookup; literal addresses never reach one.
      const host = target.hostname.replace(/^\[(.*)\]$/, '$1')
      if (isIP(host)) await allowedAddresses(host, policy)
      const { agent: dispatcher, request } = await agent.client()
      const response = await request(target, {
        method: 'GET',
        headers: { accept: 'application/json, application/jwk-set+json', 'user-agent': USER_AGENT },
        dispatcher,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
      if (response.statusCode !== 200) {
        await response.body.dump()
        throw new KeySetUnavailable(`HTTP ${response.statusCode}`)
      }
      return usableKeys(JSON.parse(await readLimited(response.body)))
    } catch (error) {
      throw error instanceof KeySetUnavailable
        ? error
        : new KeySetUnavailable('fetch failed', { cause: error })
    }
  }

  function fetchNow(url: string): Promise<StoredJwks> {
    let pending = inFlight.get(url)
    if (!pending) {
      pending = download(url)
        .then((jwks) => {
          cache.set(url, jwks)
          return jwks
        })
        .finally(() => inFlight.delete(url))
      inFlight.set(url, pending)
    }
    return pending
  }

  return {
    async get(url) {
      return cache.get(url) ?? fetchNow(url)
    },
    async refresh(url) {
      if (refreshed.get(url)) return undefined
      refreshed.set(url, true)
      return fetchNow(url)
    },
    close: agent.close,
  }
}
