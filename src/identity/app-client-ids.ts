/** What every SMART app's client id starts with: an app's tokens (`azp`) are told from the service's own by it. */
export const APP_CLIENT_ID_PREFIX = 'app-'

/** Whether a token's client (`azp`) is a registered SMART app. */
export const isAppClient = (clientId: string) => clientId.startsWith(APP_CLIENT_ID_PREFIX)
