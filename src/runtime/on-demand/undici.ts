// Loaded on demand (see ioredis.ts beside it): webhook delivery and identity-provider calls.
export { Agent, buildConnector, request } from 'undici'
