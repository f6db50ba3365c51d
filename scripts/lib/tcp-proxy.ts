import { createServer, Socket as NetSocket, type Server, type Socket } from 'node:net'

/**
 * A loopback TCP proxy that can take a database away from a running app: cut (connections refused
 * and dropped) or black-holed (connections accepted and kept, nothing forwarded either way, as over
 * a network that silently loses packets).
 */
export async function startTcpProxy(targetHost: string, targetPort: number) {
  const sockets = new Set<Socket>()
  const pairs = new Set<{ client: Socket; upstream: Socket }>()
  let server: Server | undefined
  let port = 0
  let blackHoled = false

  // Read and dropped. Resumed explicitly: an unpiped socket is left paused, and a paused socket
  // would never notice its peer closing, so the other side of the pair would stay open for ever.
  const swallow = (socket: Socket) => socket.on('data', () => {}).resume()

  const listen = async () => {
    if (server?.listening) return
    server = createServer((client) => {
      sockets.add(client)
      const upstream = new NetSocket()
      const drop = () => {
        client.destroy()
        upstream.destroy()
        sockets.delete(client)
        sockets.delete(upstream)
      }
      client.on('error', drop).on('close', drop)
      upstream.on('error', drop).on('close', drop)
      if (blackHoled) {
        swallow(client)
        return
      }
      sockets.add(upstream)
      upstream.connect(targetPort, targetHost)
      client.pipe(upstream).pipe(client)
      pairs.add({ client, upstream })
    })
    await new Promise<void>((resolve, reject) => {
      server?.once('error', reject)
      server?.listen(port, '127.0.0.1', resolve)
    })
    port = (server.address() as { port: number }).port
  }

  await listen()
  return {
    get port() {
      return port
    },
    /** Refuses new connections and drops the open ones. */
    async cut() {
      for (const socket of sockets) socket.destroy()
      sockets.clear()
      pairs.clear()
      await new Promise<void>((resolve) => server?.close(() => resolve()))
    },
    restore: listen,
    /** Keeps every connection open but forwards nothing more, on open connections and new ones. */
    blackHole() {
      blackHoled = true
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        swallow(client)
        swallow(upstream)
      }
      pairs.clear()
    },
    /** Forwards new connections again; those caught in the black hole stay silent, as after a partition. */
    forward() {
      blackHoled = false
    },
  }
}

export type TcpProxy = Awaited<ReturnType<typeof startTcpProxy>>
