import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose'

export interface SigningKeyPair {
  kid: string
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']
  jwk: JWK
}

export async function newSigningKey(kid: string): Promise<SigningKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true })
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } }
}

/**
 * A minimal OpenID provider on loopback: the Keycloak-style discovery document and key set; its
 * token endpoint answers 404. Tests change the published keys to simulate rotation.
 */
export async function startJwksServer(realm: string) {
  let published: JWK[] = []
  let jwksRequests = 0
  const server: Server = createServer((request, response) => {
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/${realm}`
    response.setHeader('content-type', 'application/json')
    if (request.url === `/realms/${realm}/.well-known/openid-configuration`) {
      response.end(
        JSON.stringify({
          issuer,
          jwks_uri: `${issuer}/protocol/openid-connect/certs`,
          token_endpoint: `${issuer}/protocol/openid-connect/token`,
        }),
      )
    } else if (request.url === `/realms/${realm}/protocol/openid-connect/certs`) {
      jwksRequests += 1
      response.end(JSON.stringify({ keys: published }))
    } else {
      response.statusCode = 404
      response.end('{}')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/${realm}`
  return {
    issuer,
    publish(keys: SigningKeyPair[]) {
      published = keys.map((key) => key.jwk)
    },
    get jwksRequests() {
      return jwksRequests
    },
    sign(key: SigningKeyPair, claims: Record<string, unknown>, lifetimeSeconds = 300) {
      const now = Math.floor(Date.now() / 1000)
      return new SignJWT({ iss: issuer, typ: 'Bearer', iat: now, exp: now + lifetimeSeconds, ...claims })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid })
        .sign(key.privateKey)
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}
