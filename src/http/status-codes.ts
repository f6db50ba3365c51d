import type * as Http from 'node:http'
import { createRequire } from 'node:module'

/**
 * Node's reason phrases, read with require(): an ES import of node:http builds the module's whole
 * namespace, and on Node.js 22 and later one of its getters (WebSocket) loads Node's bundled undici
 * with it, a noticeable share of every start for a table of strings (docs/performance-log.md).
 */
export const STATUS_CODES = (createRequire(import.meta.url)('node:http') as typeof Http).STATUS_CODES
