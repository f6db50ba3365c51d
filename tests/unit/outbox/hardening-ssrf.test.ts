import { createServer, type LookupFunction, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSender } from '../../../src/outbox/sender.js'
import {
  addressRange,
  guardedConnector,
  isRefusedAddress,
  type TargetPolicy,
  TargetRefused,
} from '../../../src/outbox/targets.js'

// Every connection in this file goes to a server on 127.0.0.1; names are stubbed, never resolved.

describe('isRefusedAddress (ipaddr.js ranges)', () => {
  it.each([
    ['6to4 carrying a public IPv4 address', '2002:5db8:d822::1'],
    ['6to4 carrying a private IPv4 address', '2002:a00:1::1'],
    ['Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ['NAT64 (well-known prefix)', '64:ff9b::a00:1'],
    ['NAT64 (local-use prefix)', '64:ff9b:1::a00:1'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped private, hex form', '::ffff:a00:1'],
    ['IPv4-compatible loopback', '::7f00:1'],
    ['IPv4-compatible private, dotted form', '::10.0.0.1'],
    ['IPv4-translated (RFC 6145)', '::ffff:0:a00:1'],
    ['IPv6 benchmarking', '2001:2::1'],
    ['IPv6 documentation', '2001:db8::1'],
    ['IPv6 segment routing', '5f00::1'],
    ['IPv6 discard-only', '100::1'],
    ['IPv6 site-local (deprecated)', 'fec0::1'],
    ['IPv6 link-local with a zone', 'fe80::1%eth0'],
    ['the 6to4 relay anycast', '192.88.99.1'],
    ['AS112', '192.31.196.1'],
    ['AMT', '192.52.193.1'],
    ['broadcast', '255.255.255.255'],
    ['a shortened IPv4 form', '127.1'],
    ['not an address', 'example.com'],
  ])('refuses %s (%s)', (_label, address) => {
    expect(isRefusedAddress(address)).toBe(true)
  })

  it.each([
    ['a public IPv4 address', '93.184.216.34'],
    ['a public IPv6 address', '2606:4700:4700::1111'],
    ['a public IPv4 address in IPv4-mapped form', '::ffff:93.184.216.34'],
  ])('allows %s (%s)', (_label, address) => {
    expect(isRefusedAddress(address)).toBe(false)
  })

  it('judges IPv4-mapped and -compatible forms by the IPv4 address they carry', () => {
    expect(addressRange('::ffff:10.1.2.3')).toBe('private')
    expect(addressRange('::ffff:a9fe:a9fe')).toBe('linkLocal')
    expect(addressRange('::a9fe:a9fe')).toBe('linkLocal')
    expect(addressRange('2002:a00:1::1')).toBe('6to4')
  })
})

/** A TCP server on loopback that records what each connection sends, then closes it. */
async function startRecorder() {
  const received: Buffer[] = []
  let connections = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    connections++
    sockets.add(socket)
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk)
      socket.destroy()
    })
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as { port: number }).port,
    get connections() {
      return connections
    },
    bytes: () => Buffer.concat(received),
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

let recorder: Awaited<ReturnType<typeof startRecorder>>
beforeAll(async () => {
  recorder = await startRecorder()
})
afterAll(async () => {
  await recorder.close()
})

const strict: TargetPolicy = {
  allowHttp: true,
  allowPrivateTargets: false,
  resolve: async () => ['93.184.216.34'],
}

/** A lookup that answers something other than what the policy checked (a rebinding resolver). */
const rebindingLookup = ((
  _host: string,
  options: { all?: boolean },
  callback: (...args: unknown[]) => void,
) => {
  if (options.all) callback(null, [{ address: '127.0.0.1', family: 4 }])
  else callback(null, '127.0.0.1', 4)
}) as LookupFunction

function connectWith(policy: TargetPolicy, protocol: 'http:' | 'https:', lookup?: LookupFunction) {
  const connect = guardedConnector(policy, { timeoutMs: 2000, ...(lookup ? { lookup } : {}) })
  return new Promise<{ error: Error | null; socket: Socket | null }>((resolve) => {
    connect(
      { hostname: 'rebinding.example.test', protocol, port: String(recorder.port) },
      (error: Error | null, socket: Socket | null) => resolve({ error, socket }),
    )
  })
}

describe('guardedConnector: the address actually connected is checked again', () => {
  it.each(['http:', 'https:'] as const)(
    'closes a %s connection that reached an internal address, before sending a byte',
    async (protocol) => {
      const before = recorder.bytes().length
      const { error, socket } = await connectWith(strict, protocol, rebindingLookup)
      expect(socket).toBeNull()
      expect(error).toBeInstanceOf(TargetRefused)
      expect(error?.message).toMatch(/internal address/)
      // The TCP handshake happened (that is what was checked), but nothing, not even a TLS
      // ClientHello, was written to it.
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(recorder.bytes().length).toBe(before)
    },
  )

  it('hands over a checked connection, and runs TLS over it for https', async () => {
    const open = { ...strict, allowPrivateTargets: true, resolve: async () => ['127.0.0.1'] }
    const plain = await connectWith(open, 'http:')
    expect(plain.error).toBeNull()
    expect(plain.socket?.remoteAddress).toBe('127.0.0.1')
    plain.socket?.destroy()

    const before = recorder.bytes().length
    const secure = await connectWith(open, 'https:')
    // The recorder is no TLS server: the handshake fails after the ClientHello (record type 22).
    expect(secure.error).not.toBeNull()
    expect(recorder.bytes()[before]).toBe(0x16)
  })

  it('makes the webhook sender refuse the delivery with the policy’s message', async () => {
    const sender = createSender({
      connectTimeoutMs: 2000,
      timeoutMs: 2000,
      policy: { ...strict, resolve: async () => ['64:ff9b::7f00:1'] },
    })
    try {
      const connectionsBefore = recorder.connections
      const outcome = await sender.send(
        `http://nat64.example.test:${recorder.port}/hook`,
        {},
        '{}',
        new AbortController().signal,
      )
      expect(outcome).toMatchObject({
        statusCode: null,
        error: 'url resolves to a loopback, private, link-local or otherwise internal address',
      })
      expect(recorder.connections).toBe(connectionsBefore)
    } finally {
      await sender.close()
    }
  })
})
