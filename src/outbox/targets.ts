import { lookup } from 'node:dns/promises'
import { BlockList, isIP, type LookupFunction } from 'node:net'

/** Every address a host name resolves to (injectable, so tests never depend on real DNS). */
export type HostResolver = (hostname: string) => Promise<string[]>

export const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address)

export interface TargetPolicy {
  allowHttp: boolean
  allowPrivateTargets: boolean
  resolve: HostResolver
}

/** A webhook address the service will not send to; the message is safe to show to the caller. */
export class TargetRefused extends Error {}

// Addresses a webhook must never reach: they would let a caller make this service probe or call
// internal systems (SSRF). Cloud metadata endpoints live in link-local (169.254.169.254, AWS's
// fd00:ec2::254), CGNAT (Alibaba's 100.100.100.200) and 192.0.0.0/24 (Oracle's 192.0.0.192).
// IPv4-mapped, IPv4-compatible and NAT64 IPv6 forms are refused outright, since each can carry a
// private IPv4 address.
const REFUSED = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv4')
}
for (const [network, prefix] of [
  ['::', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  REFUSED.addSubnet(network, prefix, 'ipv6')
}

// Kept apart: BlockList matches every IPv4 address against an IPv4-mapped IPv6 rule.
const IPV4_MAPPED = new BlockList()
IPV4_MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6')

export function isRefusedAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true
  if (family === 6) return IPV4_MAPPED.check(address, 'ipv6') || REFUSED.check(address, 'ipv6')
  return REFUSED.check(address, 'ipv4')
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1')

/** Scheme, credentials and obviously local names: everything that needs no DNS. */
export function checkUrlShape(url: string, policy: TargetPolicy): URL {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TargetRefused('url must be an absolute URL')
  }
  if (parsed.protocol !== 'https:' && !(policy.allowHttp && parsed.protocol === 'http:')) {
    throw new TargetRefused(policy.allowHttp ? 'url must use https or http' : 'url must use https')
  }
  // Credentials in the address would be stored and shown in clear; the signature authenticates us.
  if (parsed.username || parsed.password) throw new TargetRefused('url must not contain credentials')
  const host = bare(parsed.hostname).toLowerCase()
  if (!policy.allowPrivateTargets && (host === 'localhost' || host.endsWith('.localhost'))) {
    throw new TargetRefused('url must not point to this machine')
  }
  return parsed
}

const notAllowed = () =>
  new TargetRefused('url resolves to a loopback, private, link-local or otherwise internal address')

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
      throw new TargetRefused('url host does not resolve')
    }
  }
  if (addresses.length === 0) throw new TargetRefused('url host does not resolve')
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
export function guardedLookup(policy: TargetPolicy): LookupFunction {
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
