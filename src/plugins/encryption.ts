import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { loadEncryptionKey, SecretBox } from '../lib/secret-box.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Encrypts values stored in the database that must be readable again (webhook secrets). */
    secretBox: SecretBox
  }
}

const encryption: FastifyPluginAsync<{
  key: string | undefined
  dataDir: string
  sharedDatabase: boolean
}> = async (app, { key, dataDir, sharedDatabase }) => {
  app.decorate(
    'secretBox',
    new SecretBox(await loadEncryptionKey({ configured: key, dataDir, sharedDatabase })),
  )
}

export default fp(encryption, { name: 'encryption' })
