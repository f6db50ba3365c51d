import { createServer, Socket as NetSocket, type Server, type Socket } from 'node:net'

/** A loopback TCP proxy that can be cut and restored, to take a database away from a running app. */
export async function startTcpProxy(targetHost: string, targetPort: number) {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0

  const listen = async () => {
    if (server?.listening) return
    server = createServer((client) => {
      const upstream = new NetSocket()
      sockets.add(client).add(upstream)
      upstream.connect(targetPort, targetHost)
      client.pipe(upstream).pipe(client)
      const drop = () => {
        client.destroy()
        upstream.destroy()
        sockets.delete(client)
        sockets.delete(upstream)
      }
      client.on('error', drop).on('close', drop)
      upstream.on('error', drop).on('close', drop)
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
      await new Promise<void>((resolve) => server?.close(() => resolve()))
    },
    restore: listen,
  }
}
