/** Lifetimes fixed by the API specification. */
export const ACCESS_TOKEN_TTL_SECONDS = 3600
export const REFRESH_TOKEN_TTL_SECONDS = 86_400
