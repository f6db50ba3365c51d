import { lookup } from 'node:dns/promises'
import { connect as connectTcp, isIP, type LookupFunction, type Socket } from 'node:net'
import ipaddr from 'ipaddr.js'
import type { buildConnector } from 'undici'

/** Every address a host name resolves to (injectable, so tests never depend on real DNS). */
export type HostResolver = (hostname: string) => Promise<string[]>

export const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address)

export interface TargetPolicy {
  allowHttp: boolean
  allowPrivateTargets: boolean
  resolve: HostResolver
}

/**
 * An address the service will not send to; safe to show to the caller. `problem` is what is wrong
 * with it, to follow the name of the field that holds it (`url`, `jwksUrl`).
 */
export class TargetRefused extends Error {
  constructor(readonly problem: string) {
    super(`url ${problem}`)
  }
}

// Addresses a webhook must never reach: they would let a caller make this service probe or call
// internal systems (SSRF). Only what ipaddr.js (a maintained registry of the IANA special-purpose
// ranges) calls `unicast` passes: loopback, private, CGNAT (Alibaba's metadata 100.100.100.200),
// link-local (169.254.169.254), unique-local (AWS's fd00:ec2::254), 192.0.0.0/24 (Oracle's
// 192.0.0.192), documentation, benchmarking, multicast and reserved ranges are all something else.
// Tunnel and translation prefixes are refused whatever they carry: 6to4 (2002::/16), Teredo
// (2001::/32) and NAT64 (64:ff9b::/96, 64:ff9b:1::/48) reach an IPv4 address through a relay or
// translator this service cannot see. IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d)
// addresses are judged by the IPv4 address they carry, which is where such a connection goes.
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const [a, b, c, d, e, f, high = 0, low = 0] = address.parts
  if (a !== 0 || b !== 0 || c !== 0 || d !== 0 || e !== 0 || (f !== 0 && f !== 0xffff)) return undefined
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])
}

/** The ipaddr.js range of an address, with IPv4-mapped and -compatible forms as their IPv4. */
export function addressRange(address: string): string {
  // Node's own parser first: ipaddr.js also takes forms such as `127.1` that are not addresses here.
  if (isIP(address) === 0) return 'invalid'
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return 'invalid'
  }
  if (parsed.kind() === 'ipv6') return (embeddedIPv4(parsed as ipaddr.IPv6) ?? parsed).range()
  return parsed.range()
}

export function isRefusedAddress(address: string): boolean {
  return addressRange(address) !== 'unicast'
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1')

/** Scheme, credentials and obviously local names: everything that needs no DNS. */
export function checkUrlShape(url: string, policy: TargetPolicy): URL {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TargetRefused('must be an absolute URL')
  }
  if (parsed.protocol !== 'https:' && !(policy.allowHttp && parsed.protocol === 'http:')) {
    throw new TargetRefused(policy.allowHttp ? 'must use https or http' : 'must use https')
  }
  // Credentials in the address would be stored and shown in clear; the signature authenticates us.
  if (parsed.username || parsed.password) throw new TargetRefused('must not contain credentials')
  const host = bare(parsed.hostname).toLowerCase()
  if (!policy.allowPrivateTargets && (host === 'localhost' || host.endsWith('.localhost'))) {
    throw new TargetRefused('must not point to this machine')
  }
  return parsed
}

const notAllowed = () =>
  new TargetRefused('resolves to a loopback, private, link-local or otherwise internal address')

/** The addresses of `hostname` that may be connected to; refuses if any of them is internal. */
export async function allowedAddresses(hostname: string, policy: TargetPolicy): Promise<string[]> {
  const host = bare(hostname)
  let addresses: string[]
  if (isIP(host)) {
    addresses = [host]
  } else {
    try {
      addresses = await policy.resolve(host)
    } catch {
      throw new TargetRefused('host does not resolve')
    }
  }
  if (addresses.length === 0) throw new TargetRefused('host does not resolve')
  // All, not any: a name that resolves to one public and one private address would otherwise
  // reach the private one on some connections.
  if (!policy.allowPrivateTargets && addresses.some(isRefusedAddress)) throw notAllowed()
  return addresses
}

/** Registration check: the shape, then where the host resolves to now. */
export async function checkTarget(url: string, policy: TargetPolicy): Promise<URL> {
  const parsed = checkUrlShape(url, policy)
  await allowedAddresses(parsed.hostname, policy)
  return parsed
}

/**
 * A `lookup` for outgoing connections: the connection is made to exactly the addresses that were
 * checked, so a DNS answer that changes between the check and the connect (rebinding) cannot
 * slip an internal address through. IP literals never reach a lookup; the sender checks those.
 */
function guardedLookup(policy: TargetPolicy): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    allowedAddresses(hostname, policy).then(
      (addresses) => {
        const entries = addresses.map((address) => ({ address, family: isIP(address) }))
        if (options.all) callback(null, entries)
        else callback(null, entries[0]?.address, entries[0]?.family)
      },
      (error: unknown) => callback(error),
    )
  }) as LookupFunction
}

type Connector = buildConnector.connector

/** undici's connector, for TLS over a socket already checked; loaded with undici itself. */
let tlsConnectorFactory: Promise<typeof buildConnector> | undefined
const loadConnectorFactory = () => {
  tlsConnectorFactory ??= import('../runtime/on-demand/undici.js').then((undici) => undici.buildConnector)
  return tlsConnectorFactory
}

const connectTimeout = () =>
  Object.assign(new Error('connect timeout'), {
    name: 'ConnectTimeoutError',
    code: 'UND_ERR_CONNECT_TIMEOUT',
  })

/**
 * undici's `connect` for outgoing webhook and JWKS connections: the TCP connection is opened
 * through `guardedLookup`, and the address it actually reached is checked again before a single
 * byte (a TLS ClientHello included) is written, so a name that resolves differently between the
 * check and the connect (DNS rebinding), a literal address, or any other path to a socket cannot
 * end at an internal address. TLS then runs over that socket with undici's own connector
 * (session reuse, ALPN, SNI). `lookup` is replaceable for tests only.
 */
export function guardedConnector(
  policy: TargetPolicy,
  { timeoutMs, lookup = guardedLookup(policy) }: { timeoutMs: number; lookup?: LookupFunction },
): Connector {
  let tls: Connector | undefined
  return (options, callback) => {
    const secure = options.protocol === 'https:'
    const socket: Socket = connectTcp({
      host: options.hostname,
      port: Number(options.port) || (secure ? 443 : 80),
      lookup,
      ...(options.localAddress ? { localAddress: options.localAddress } : {}),
    })
    let settled = false
    const finish = (error: Error | null) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (error) {
        socket.destroy()
        callback(error, null)
        return
      }
      socket.setNoDelay(true).setKeepAlive(true, 60_000)
      if (!secure) {
        callback(null, socket)
        return
      }
      loadConnectorFactory().then(
        (build) => {
          tls ??= build({ timeout: timeoutMs })
          tls({ ...options, httpSocket: socket }, callback)
        },
        (loadError: Error) => {
          socket.destroy()
          callback(loadError, null)
        },
      )
    }
    const timer = setTimeout(() => finish(connectTimeout()), timeoutMs)
    // Stays attached (a no-op once settled): an error in the moment before TLS or undici takes the
    // socket over must not go unheard and crash the process.
    socket.on('error', finish)
    socket.once('connect', () => {
      const peer = socket.remoteAddress
      finish(
        !policy.allowPrivateTargets && (peer === undefined || isRefusedAddress(peer)) ? notAllowed() : null,
      )
    })
  }
}
