import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { SecretBox } from '../lib/secret-box.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Encrypts values stored in the database that must be readable again (webhook secrets). */
    secretBox: SecretBox
  }
}

const encryption: FastifyPluginAsync<{ key: Buffer }> = async (app, { key }) => {
  app.decorate('secretBox', new SecretBox(key))
}

export default fp(encryption, { name: 'encryption' })
