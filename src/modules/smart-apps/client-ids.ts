import { randomBytes } from 'node:crypto'
import { APP_CLIENT_ID_PREFIX } from '../../identity/app-client-ids.js'

/** 16 random bytes: a client id nobody can guess, so that an app's id says nothing and finds nothing. */
export const newClientId = () => `${APP_CLIENT_ID_PREFIX}${randomBytes(16).toString('hex')}`
