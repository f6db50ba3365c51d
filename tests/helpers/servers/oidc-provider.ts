import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, type JWK } from 'jose'

export interface OidcTestUser {
  subject: string
  username: string
  password: string
  email: string
  givenName: string
  familyName: string
  roles: string[]
  groups: string[]
}

export interface OidcProviderOptions {
  realm: string
  clientId: string
  clientSecret: string
  redirectUri: string
  users: OidcTestUser[]
  /** Keycloak's default is 300 s. */
  accessTokenLifetimeSeconds?: number
  /**
   * `keycloak` (the default): Keycloak's paths under /realms/<realm>. `plain`: oidc-provider's own
   * paths (/auth, /token, /jwks, …) under /oidc/<realm>, as a provider that is not Keycloak has them.
   */
  paths?: 'keycloak' | 'plain'
}

export interface OidcProviderHarness {
  issuer: string
  /** Signs new tokens with a new RSA key; the key set keeps publishing every earlier key. */
  rotateKeys(): Promise<void>
  /** Drives the authorization-code flow as a browser would and returns the code sent to redirectUri. */
  authorizationCode(username: string, password: string, codeChallenge?: string): Promise<string>
  /**
   * An outage: `refuse` stops listening (connections are refused), `hang` accepts requests and
   * never answers them.
   */
  outage(mode: 'refuse' | 'hang'): Promise<void>
  /** Ends an outage on the same address. Requests left hanging stay unanswered, as after a network fault. */
  restore(): Promise<void>
  close(): Promise<void>
}

// Keycloak's default SSO session idle timeout, which bounds its refresh tokens.
const REFRESH_TOKEN_LIFETIME_SECONDS = 1800
const KEYCLOAK_SCOPES = ['openid', 'profile', 'email']

// oidc-provider ships no type declarations; these describe the parts of its API used here.
type Middleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>

interface KoaContext {
  status: number
  body: unknown
  oidc?: OidcContext
}

interface OidcContext {
  route?: string
  params: Record<string, string | undefined>
  client: OidcClient
  entities: { AccessToken?: { grantId?: string }; RefreshToken?: { remainingTTL: number } }
  entity(name: string, value: unknown): void
}

interface GrantContext extends KoaContext {
  oidc: OidcContext
}

interface OidcClient {
  clientId: string
  grantTypeAllowed(grantType: string): boolean
}

interface Grant {
  addOIDCScope(scope: string): void
  addOIDCClaims(claims: string[]): void
  addResourceScope(resource: string, scope: string): void
  save(): Promise<string>
}

interface IssuedToken {
  expiration: number
  save(): Promise<string>
}

interface StoredRefreshToken {
  clientId: string
  grantId: string
}

interface ResourceServerInfo {
  scope: string
  audience: string
  accessTokenFormat: 'jwt'
  jwt: { sign: { alg: 'RS256' } }
}

interface InteractionDetails {
  prompt: {
    name: string
    details: {
      missingOIDCScope?: string[]
      missingOIDCClaims?: string[]
      missingResourceScopes?: Record<string, string[]>
    }
  }
  params: { client_id: string }
  session?: { accountId: string }
  grantId?: string
}

interface TokenAccess {
  accountId: string
  clientId: string
  grantId?: string
}

interface Provider {
  callback(): (request: IncomingMessage, response: ServerResponse) => Promise<void>
  use(middleware: Middleware): void
  registerGrantType(name: string, handler: (ctx: GrantContext) => Promise<void>, parameters: string[]): void
  interactionDetails(request: IncomingMessage, response: ServerResponse): Promise<InteractionDetails>
  interactionFinished(
    request: IncomingMessage,
    response: ServerResponse,
    result: Record<string, unknown>,
    options: { mergeWithLastSubmission: boolean },
  ): Promise<void>
  Grant: {
    new (properties: { accountId: string; clientId: string }): Grant
    find(grantId: string): Promise<Grant | undefined>
  }
  AccessToken: new (properties: Record<string, unknown>) => IssuedToken
  RefreshToken: {
    new (properties: Record<string, unknown>): IssuedToken
    find(value: string): Promise<StoredRefreshToken | undefined>
  }
  ResourceServer: new (identifier: string, info: ResourceServerInfo) => unknown
}

interface OidcProviderModule {
  Provider: new (issuer: string, configuration: Record<string, unknown>) => Provider
  errors: {
    CustomOIDCProviderError: new (error: string, description: string) => Error
    InvalidTarget: new () => Error
  }
}

let loadingModule: Promise<OidcProviderModule> | undefined

function loadOidcProvider(): Promise<OidcProviderModule> {
  loadingModule ??= (async () => {
    // The package warns on import that Node 20 is not a supported LTS (it works here, see
    // docs/toolchain.md); the warning can only be silenced around the import itself.
    const warn = console.warn
    console.warn = (...args: unknown[]) => {
      if (!String(args[0]).startsWith('oidc-provider WARNING: Unsupported runtime')) warn(...args)
    }
    try {
      // @ts-expect-error oidc-provider ships no type declarations
      return (await import('oidc-provider')) as OidcProviderModule
    } finally {
      console.warn = warn
    }
  })()
  return loadingModule
}

interface StoredPayload {
  grantId?: string
  uid?: string
  consumed?: number
}

/** oidc-provider's storage adapter, shared by every Provider instance of one harness so rotation keeps state. */
function createMemoryStore() {
  const records = new Map<string, { payload: StoredPayload; expiresAt: number }>()
  const grantMembers = new Map<string, Set<string>>()
  const sessionIdsByUid = new Map<string, string>()

  const read = (key: string) => {
    const record = records.get(key)
    if (record && record.expiresAt <= Date.now()) records.delete(key)
    return records.get(key)?.payload
  }

  class Adapter {
    readonly model: string

    constructor(model: string) {
      this.model = model
    }

    async upsert(id: string, payload: StoredPayload, expiresIn?: number) {
      const key = `${this.model}:${id}`
      const expiresAt = expiresIn ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY
      records.set(key, { payload, expiresAt })
      if (this.model === 'Session' && payload.uid) sessionIdsByUid.set(payload.uid, id)
      if (payload.grantId) {
        const members = grantMembers.get(payload.grantId) ?? new Set()
        grantMembers.set(payload.grantId, members.add(key))
      }
    }

    async find(id: string) {
      return read(`${this.model}:${id}`)
    }

    async findByUid(uid: string) {
      const id = sessionIdsByUid.get(uid)
      return id === undefined ? undefined : read(`Session:${id}`)
    }

    async consume(id: string) {
      const payload = read(`${this.model}:${id}`)
      if (payload) payload.consumed = Math.floor(Date.now() / 1000)
    }

    async destroy(id: string) {
      records.delete(`${this.model}:${id}`)
    }

    async revokeByGrantId(grantId: string) {
      for (const key of grantMembers.get(grantId) ?? []) {
        if (key.startsWith(`${this.model}:`)) records.delete(key)
      }
    }
  }

  /** Keycloak's logout: the grant and every token issued under it. */
  const endGrant = (grantId: string) => {
    for (const key of grantMembers.get(grantId) ?? []) records.delete(key)
    grantMembers.delete(grantId)
    records.delete(`Grant:${grantId}`)
  }

  return { Adapter, endGrant }
}

async function newSigningKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  return {
    ...(await exportJWK(privateKey)),
    kid: randomBytes(16).toString('base64url'),
    alg: 'RS256',
    use: 'sig',
  }
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return new URLSearchParams(Buffer.concat(chunks).toString())
}

function sendJson(response: ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
}

/**
 * A real OpenID provider (oidc-provider) on loopback that looks like a Keycloak realm: Keycloak's
 * paths under /realms/<realm>, a confidential client, the password grant, RS256 JWT access tokens
 * with Keycloak's claims, Keycloak's token set fields and Keycloak's refresh-token logout.
 */
export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProviderHarness> {
  const { Provider, errors } = await loadOidcProvider()
  const { realm, clientId, clientSecret, redirectUri, users } = options
  const accessTokenLifetime = options.accessTokenLifetimeSeconds ?? 300
  const plain = options.paths === 'plain'
  const prefix = plain ? `/oidc/${realm}` : `/realms/${realm}`
  const routes = plain
    ? {
        authorization: '/auth',
        token: '/token',
        jwks: '/jwks',
        revocation: '/token/revocation',
        introspection: '/token/introspection',
        end_session: '/session/end',
        userinfo: '/me',
      }
    : {
        authorization: '/protocol/openid-connect/auth',
        token: '/protocol/openid-connect/token',
        jwks: '/protocol/openid-connect/certs',
        revocation: '/protocol/openid-connect/revoke',
        introspection: '/protocol/openid-connect/token/introspect',
        end_session: '/protocol/openid-connect/logout',
        userinfo: '/protocol/openid-connect/userinfo',
      }
  const loginActions = `${prefix}/login-actions/authenticate`
  // Access tokens are JWTs only when issued for a resource server; this one stands for the client.
  const resourceIndicator = `urn:oidc-test:${realm}:${clientId}`
  const resourceServerInfo: ResourceServerInfo = {
    scope: KEYCLOAK_SCOPES.join(' '),
    audience: clientId,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'RS256' } },
  }
  const store = createMemoryStore()
  const cookieKeys = [randomBytes(32).toString('base64url')]
  const findUser = (subject: string) => users.find((user) => user.subject === subject)

  let hanging = false
  const server: Server = createServer((request, response) => {
    if (hanging) return
    const url = request.url ?? '/'
    const path = url.split('?')[0] ?? url
    const handle = () => {
      if (path.startsWith(`${loginActions}/`)) return login(request, response)
      if (request.method === 'POST' && path === `${prefix}${routes.end_session}`)
        return logout(request, response)
      if (!path.startsWith(`${prefix}/`)) return sendJson(response, 404, { error: 'Not Found' })
      // oidc-provider derives its mount path (and so every URL it advertises) from originalUrl.
      Object.assign(request, { originalUrl: url })
      request.url = url.slice(prefix.length)
      return current.handle(request, response)
    }
    Promise.resolve(handle()).catch((error: unknown) => {
      if (!response.headersSent)
        sendJson(response, 500, { error: 'server_error', error_description: String(error) })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const issuer = `${origin}${prefix}`

  async function passwordGrant(ctx: GrantContext) {
    const { params, client } = ctx.oidc
    const user = users.find((candidate) => candidate.username === params.username)
    if (!user || user.password !== params.password) {
      // Keycloak answers bad user credentials with 401 where oidc-provider's grant errors are 400.
      throw Object.assign(new errors.CustomOIDCProviderError('invalid_grant', 'Invalid user credentials'), {
        status: 401,
        statusCode: 401,
      })
    }
    const requested = new Set(params.scope?.split(' '))
    const scope = KEYCLOAK_SCOPES.filter((name) => name !== 'openid' || requested.has('openid')).join(' ')
    const grant = new current.provider.Grant({ accountId: user.subject, clientId: client.clientId })
    grant.addOIDCScope(scope)
    grant.addResourceScope(resourceIndicator, scope)
    const grantId = await grant.save()
    const issued = { accountId: user.subject, client, grantId, gty: 'password', scope }
    const accessToken = new current.provider.AccessToken({
      ...issued,
      resourceServer: new current.provider.ResourceServer(resourceIndicator, resourceServerInfo),
    })
    const refreshToken = new current.provider.RefreshToken({
      ...issued,
      resource: resourceIndicator,
      rotations: 0,
    })
    ctx.oidc.entity('AccessToken', accessToken)
    ctx.oidc.entity('RefreshToken', refreshToken)
    ctx.body = {
      access_token: await accessToken.save(),
      expires_in: accessToken.expiration,
      refresh_token: await refreshToken.save(),
      token_type: 'Bearer',
      scope,
    }
  }

  /** Adds the members Keycloak puts in every token set, whichever grant produced it. */
  const keycloakTokenSet: Middleware = async (ctx, next) => {
    await next()
    const { oidc, body } = ctx
    if (oidc?.route !== 'token' || ctx.status !== 200 || typeof body !== 'object') return
    ctx.body = {
      ...body,
      refresh_expires_in: oidc.entities.RefreshToken?.remainingTTL ?? 0,
      'not-before-policy': 0,
      session_state: oidc.entities.AccessToken?.grantId,
    }
  }

  function keycloakClaims(_ctx: unknown, token: TokenAccess, jwt: { header?: object; payload: object }) {
    jwt.header = { typ: 'JWT' }
    const user = findUser(token.accountId)
    if (!user) return
    Object.assign(jwt.payload, {
      typ: 'Bearer',
      azp: token.clientId,
      session_state: token.grantId,
      acr: '1',
      realm_access: { roles: user.roles },
      resource_access: { [clientId]: { roles: user.roles } },
      groups: user.groups,
      email: user.email,
      email_verified: true,
      name: `${user.givenName} ${user.familyName}`,
      preferred_username: user.username,
      given_name: user.givenName,
      family_name: user.familyName,
    })
  }

  function createProvider(keys: JWK[]) {
    const provider = new Provider(issuer, {
      adapter: store.Adapter,
      jwks: { keys },
      cookies: { keys: cookieKeys },
      clients: [
        {
          client_id: clientId,
          client_secret: clientSecret,
          redirect_uris: [redirectUri],
          grant_types: ['authorization_code', 'refresh_token', 'password'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      routes,
      claims: {
        email: ['email', 'email_verified'],
        profile: ['name', 'given_name', 'family_name', 'preferred_username'],
      },
      features: {
        devInteractions: { enabled: false },
        introspection: { enabled: true },
        revocation: {
          enabled: true,
          allowedPolicy: async (_ctx: unknown, client: OidcClient, token: { clientId: string }) =>
            token.clientId === client.clientId,
        },
        resourceIndicators: {
          enabled: true,
          defaultResource: async () => resourceIndicator,
          useGrantedResource: async () => true,
          getResourceServerInfo: async (_ctx: unknown, resource: string) => {
            if (resource !== resourceIndicator) throw new errors.InvalidTarget()
            return resourceServerInfo
          },
        },
      },
      interactions: {
        url: async (_ctx: unknown, interaction: { uid: string }) => `${loginActions}/${interaction.uid}`,
      },
      findAccount: async (_ctx: unknown, subject: string) => {
        const user = findUser(subject)
        return (
          user && {
            accountId: subject,
            claims: async () => ({
              sub: subject,
              email: user.email,
              email_verified: true,
              name: `${user.givenName} ${user.familyName}`,
              given_name: user.givenName,
              family_name: user.familyName,
              preferred_username: user.username,
            }),
          }
        )
      },
      issueRefreshToken: async (_ctx: unknown, client: OidcClient) =>
        client.grantTypeAllowed('refresh_token'),
      formats: { customizers: { jwt: keycloakClaims } },
      ttl: {
        AccessToken: accessTokenLifetime,
        IdToken: accessTokenLifetime,
        RefreshToken: REFRESH_TOKEN_LIFETIME_SECONDS,
        Grant: REFRESH_TOKEN_LIFETIME_SECONDS,
        Session: REFRESH_TOKEN_LIFETIME_SECONDS,
        Interaction: 600,
      },
    })
    provider.registerGrantType('password', passwordGrant, ['username', 'password', 'scope'])
    provider.use(keycloakTokenSet)
    return { provider, handle: provider.callback() }
  }

  let keys = [await newSigningKey()]
  let current = createProvider(keys)

  function loginPage(response: ServerResponse, action: string, failed: boolean) {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
      `<!doctype html><html><body>${failed ? '<span id="input-error">Invalid username or password.</span>' : ''}
<form id="kc-form-login" method="post" action="${action}">
<input id="username" name="username" autocomplete="username">
<input id="password" name="password" type="password">
<input id="kc-login" type="submit" name="login" value="Sign In">
</form></body></html>`,
    )
  }

  /** The login page; consent is granted without asking, as Keycloak does for clients that do not require it. */
  async function login(request: IncomingMessage, response: ServerResponse) {
    const { provider } = current
    const details = await provider.interactionDetails(request, response)
    const action = (request.url ?? '').split('?')[0] ?? ''
    if (details.prompt.name === 'login') {
      if (request.method !== 'POST') return loginPage(response, action, false)
      const form = await readForm(request)
      const user = users.find((candidate) => candidate.username === form.get('username'))
      if (!user || user.password !== form.get('password')) return loginPage(response, action, true)
      return provider.interactionFinished(
        request,
        response,
        { login: { accountId: user.subject } },
        { mergeWithLastSubmission: false },
      )
    }
    const accountId = details.session?.accountId
    if (details.prompt.name !== 'consent' || !accountId) {
      return sendJson(response, 400, { error: 'unsupported_interaction', prompt: details.prompt.name })
    }
    const grant =
      (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
      new provider.Grant({ accountId, clientId: details.params.client_id })
    const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = details.prompt.details
    if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '))
    if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims)
    for (const [resource, scopes] of Object.entries(missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '))
    }
    const grantId = await grant.save()
    return provider.interactionFinished(
      request,
      response,
      { consent: { grantId } },
      { mergeWithLastSubmission: true },
    )
  }

  /** Keycloak's back-channel logout: POST with client authentication and the session's refresh token. */
  async function logout(request: IncomingMessage, response: ServerResponse) {
    const form = await readForm(request)
    const basic = /^Basic (.+)$/i.exec(request.headers.authorization ?? '')?.[1]
    const credentials = basic ? Buffer.from(basic, 'base64').toString() : undefined
    const colon = credentials?.indexOf(':') ?? -1
    const [id, secret] = credentials
      ? [credentials.slice(0, colon), credentials.slice(colon + 1)].map(decodeURIComponent)
      : [form.get('client_id'), form.get('client_secret')]
    if (id !== clientId || secret !== clientSecret) {
      return sendJson(response, 401, {
        error: 'unauthorized_client',
        error_description: 'Invalid client or Invalid client credentials',
      })
    }
    const value = form.get('refresh_token')
    if (!value)
      return sendJson(response, 400, { error: 'invalid_request', error_description: 'Refresh token missing' })
    const refreshToken = await current.provider.RefreshToken.find(value)
    if (!refreshToken || refreshToken.clientId !== clientId) {
      return sendJson(response, 400, { error: 'invalid_grant', error_description: 'Invalid refresh token' })
    }
    store.endGrant(refreshToken.grantId)
    response.writeHead(204).end()
  }

  return {
    issuer,
    async rotateKeys() {
      keys = [await newSigningKey(), ...keys]
      current = createProvider(keys)
    },
    authorizationCode: (username, password, codeChallenge) =>
      driveAuthorizationCode({
        authorizationUrl: `${issuer}${routes.authorization}`,
        issuer,
        clientId,
        redirectUri,
        username,
        password,
        codeChallenge,
      }),
    async outage(mode) {
      if (mode === 'hang') {
        hanging = true
        return
      }
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
    async restore() {
      hanging = false
      if (server.listening) return
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(Number(new URL(issuer).port), '127.0.0.1', () => {
          server.off('error', reject)
          resolve()
        })
      })
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()))
        server.closeAllConnections()
      }),
  }
}

/** Cookies by name and path, as a browser keeps them for one host. */
class CookieJar {
  private readonly cookies = new Map<string, { name: string; value: string; path: string }>()

  store(setCookies: string[]) {
    for (const line of setCookies) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim())
      const separator = pair.indexOf('=')
      const name = pair.slice(0, separator)
      const attribute = (key: string) =>
        attributes.find((entry) => entry.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1)
      const path = attribute('path') ?? '/'
      const expires = attribute('expires')
      const maxAge = attribute('max-age')
      const expired = (expires && Date.parse(expires) <= Date.now()) || (maxAge && Number(maxAge) <= 0)
      if (expired) this.cookies.delete(`${name};${path}`)
      else this.cookies.set(`${name};${path}`, { name, value: pair.slice(separator + 1), path })
    }
  }

  header(url: URL): string {
    return [...this.cookies.values()]
      .filter((cookie) => url.pathname.startsWith(cookie.path))
      .map((cookie) => `${cookie.name}=${cookie.value}`)
      .join('; ')
  }
}

async function driveAuthorizationCode(flow: {
  authorizationUrl: string
  issuer: string
  clientId: string
  redirectUri: string
  username: string
  password: string
  codeChallenge: string | undefined
}): Promise<string> {
  const state = randomBytes(16).toString('base64url')
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: flow.clientId,
    redirect_uri: flow.redirectUri,
    scope: 'openid',
    state,
  })
  if (flow.codeChallenge) {
    query.set('code_challenge', flow.codeChallenge)
    query.set('code_challenge_method', 'S256')
  }
  const jar = new CookieJar()
  const issuerOrigin = new URL(flow.issuer).origin
  let url = new URL(`${flow.authorizationUrl}?${query}`)
  let form: URLSearchParams | undefined
  let submittedLogin = false
  for (let hop = 0; hop < 10; hop += 1) {
    if (url.origin !== issuerOrigin) throw new Error(`authorization flow left the provider for ${url.href}`)
    const response = await fetch(url, {
      method: form ? 'POST' : 'GET',
      body: form,
      headers: { cookie: jar.header(url) },
      redirect: 'manual',
    })
    jar.store(response.headers.getSetCookie())
    const location = response.headers.get('location')
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel()
      const target = new URL(location, url)
      if (`${target.origin}${target.pathname}` === flow.redirectUri) {
        const { searchParams } = target
        if (searchParams.get('state') !== state) throw new Error(`state mismatch in ${target.href}`)
        const code = searchParams.get('code')
        if (!code)
          throw new Error(
            `authorization failed: ${searchParams.get('error')} ${searchParams.get('error_description')}`,
          )
        return code
      }
      url = target
      form = undefined
      continue
    }
    const page = await response.text()
    const action = /<form[^>]*\saction="([^"]+)"/.exec(page)?.[1]
    if (response.status !== 200 || !action || submittedLogin) {
      throw new Error(`authorization flow stopped at ${url.href}: ${response.status} ${page}`)
    }
    url = new URL(action, url)
    form = new URLSearchParams({ username: flow.username, password: flow.password })
    submittedLogin = true
  }
  throw new Error('authorization flow did not reach the redirect URI')
}
