import { randomBytes } from 'node:crypto'
import { invalidFields } from '../errors.js'
import type { SecretBox } from '../lib/secret-box.js'

const PREFIX = 'whsec_'
// The Standard Webhooks specification's bounds for a secret's key material.
const MIN_KEY_BYTES = 24
const MAX_KEY_BYTES = 64
const GENERATED_KEY_BYTES = 32

/**
 * The signing key a registered secret stands for: a Standard Webhooks secret (`whsec_` + base64)
 * signs with its decoded bytes, exactly as the `standardwebhooks` libraries read it; any other
 * string (at least 16 characters, the schema checks) with its UTF-8 bytes.
 */
export function signingKeyOf(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) return Buffer.from(secret, 'utf8')
  const encoded = secret.slice(PREFIX.length)
  const key = Buffer.from(encoded, 'base64')
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
    throw invalidFields(
      [
        {
          path: 'secret',
          message: `must be base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes after whsec_`,
        },
      ],
      `secret: a whsec_ secret must be base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} bytes`,
    )
  }
  return key
}

export function generateSecret(): string {
  return `${PREFIX}${randomBytes(GENERATED_KEY_BYTES).toString('base64')}`
}

// Bound to the organization: a ciphertext copied into another organization's row does not open.
const context = (organizationId: number) => `webhook-secret:${organizationId}`

export const sealSigningKey = (box: SecretBox, organizationId: number, key: Buffer) =>
  box.seal(key, context(organizationId))

export const openSigningKey = (box: SecretBox, organizationId: number, sealed: string) =>
  box.open(sealed, context(organizationId))

/** A sealed secret under the box's current key; undefined when it already is. */
export const resealSigningKey = (box: SecretBox, organizationId: number, sealed: string) =>
  box.reseal(sealed, context(organizationId))
