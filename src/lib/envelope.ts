/** A successful envelope; its `data` is checked against the route's response schema. */
export const ok = <T>(message: string, data: T) => ({ success: true as const, message, data })
