/**
 * A resolver for the app's `resolveHost` that knows the names of `table` alone and fails for any
 * other as DNS would (ENOTFOUND), so that registering a webhook or a key URL resolves no real name.
 */
export function stubDns(table: Record<string, string[]>) {
  return async (hostname: string): Promise<string[]> => {
    const addresses = table[hostname]
    if (!addresses) throw Object.assign(new Error(`no such host ${hostname}`), { code: 'ENOTFOUND' })
    return addresses
  }
}
