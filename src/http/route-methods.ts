import FindMyWay from 'find-my-way'

type Method = FindMyWay.HTTPMethod

const noHandler = () => {}

/**
 * Which methods each path has, for the `Allow` header of a 405: Fastify's router answers only for
 * one method at a time and does not say whether the path exists under another. A second router of
 * the same kind (and options) as Fastify's, holding every route with no handler, answers that.
 */
export function routeMethods() {
  const router = FindMyWay()
  const methods = new Set<Method>()
  return {
    add(method: string | string[], url: string) {
      for (const one of [method].flat() as Method[]) {
        router.on(one, url, noHandler)
        methods.add(one)
      }
    },
    /** The methods `url`'s path has, HEAD wherever GET is (Fastify answers it as GET), sorted. */
    of(url: string): string[] {
      const found: string[] = [...methods].filter((method) => router.find(method, url) !== null)
      if (found.includes('GET') && !found.includes('HEAD')) found.push('HEAD')
      return found.sort()
    },
  }
}
