import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { retryDelaySeconds } from '../../../src/outbox/backoff.js'
import { signatureHeader } from '../../../src/outbox/signing.js'
import { checkUrlShape, isRefusedAddress } from '../../../src/outbox/targets.js'
import { generateSecret, signingKeyOf } from '../../../src/outbox/webhook-secrets.js'

describe('retryDelaySeconds', () => {
  it('follows the schedule within ±20%, and ends after its last entry', () => {
    const schedule = [5, 300]
    expect(retryDelaySeconds(schedule, 0, () => 0)).toBeCloseTo(4)
    expect(retryDelaySeconds(schedule, 0, () => 1)).toBeCloseTo(6)
    expect(retryDelaySeconds(schedule, 1, () => 0.5)).toBeCloseTo(300)
    expect(retryDelaySeconds(schedule, 2)).toBeUndefined()
  })
})

describe('signatureHeader', () => {
  it('matches the standardwebhooks package’s own signature, one per secret', () => {
    const secret = generateSecret()
    const timestamp = new Date(1_700_000_000_000)
    const body = '{"event":"patient.created"}'
    const expected = new Webhook(secret).sign('msg_1', timestamp, body)
    expect(signatureHeader([signingKeyOf(secret)], 'msg_1', 1_700_000_000, body)).toBe(expected)
    const two = signatureHeader(
      [signingKeyOf(secret), Buffer.from('another secret')],
      'msg_1',
      1_700_000_000,
      body,
    )
    expect(two.split(' ')).toHaveLength(2)
    expect(two.startsWith(`${expected} v1,`)).toBe(true)
  })
})

describe('isRefusedAddress', () => {
  it.each([
    '127.0.0.1',
    '10.0.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.100.100.200',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    'fd00:ec2::254',
    'fe80::1',
    'ff02::1',
  ])('refuses %s', (address) => {
    expect(isRefusedAddress(address)).toBe(true)
  })

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111'])('allows %s', (address) => {
    expect(isRefusedAddress(address)).toBe(false)
  })
})

describe('checkUrlShape', () => {
  const policy = { allowHttp: false, allowPrivateTargets: false, resolve: async () => [] }

  it('wants https without credentials, and http only when allowed', () => {
    expect(checkUrlShape('https://hooks.example.com/x', policy).host).toBe('hooks.example.com')
    expect(() => checkUrlShape('http://hooks.example.com/x', policy)).toThrow('https')
    expect(checkUrlShape('http://hooks.example.com/x', { ...policy, allowHttp: true }).protocol).toBe('http:')
    expect(() => checkUrlShape('https://a:b@hooks.example.com/x', policy)).toThrow('credentials')
    expect(() => checkUrlShape('ftp://hooks.example.com/x', policy)).toThrow()
  })
})

describe('signingKeyOf', () => {
  it('decodes whsec_ secrets and takes other strings as UTF-8', () => {
    expect(signingKeyOf(`whsec_${Buffer.alloc(32, 9).toString('base64')}`)).toEqual(Buffer.alloc(32, 9))
    expect(signingKeyOf('a plain secret value')).toEqual(Buffer.from('a plain secret value'))
    expect(() => signingKeyOf(`whsec_${Buffer.alloc(65, 9).toString('base64')}`)).toThrow(
      expect.objectContaining({ code: 'VAL_001', details: expect.stringContaining('24 to 64') }),
    )
  })
})
