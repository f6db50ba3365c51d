import { randomBytes } from 'node:crypto'

/** What every app's client id starts with: an app's tokens (`azp`) are told from the service's own by it. */
export const APP_CLIENT_ID_PREFIX = 'app-'

/** 16 random bytes: a client id nobody can guess, so that an app's id says nothing and finds nothing. */
export const newClientId = () => `${APP_CLIENT_ID_PREFIX}${randomBytes(16).toString('hex')}`
