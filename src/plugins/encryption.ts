import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { SecretBox } from '../lib/secret-box.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Encrypts values stored in the database that must be readable again (webhook secrets). */
    secretBox: SecretBox
  }
}

/** `previousKeys`: ENCRYPTION_KEY_PREVIOUS during a key change (previousEncryptionKeys(config)). */
const encryption: FastifyPluginAsync<{ key: Buffer; previousKeys?: Buffer[] }> = async (
  app,
  { key, previousKeys = [] },
) => {
  app.decorate('secretBox', new SecretBox(key, previousKeys))
}

export default fp(encryption, { name: 'encryption' })
