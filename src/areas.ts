import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import type { Db } from '../db/database.js'
import type { Databases } from '../db/open-databases.js'
import type { Config } from './config.js'
import type { Mailer } from './lib/mailer.js'
import providerScheduleViewRoutes from './modules/appointments/provider-schedule-routes.js'
import appointmentRoutes from './modules/appointments/routes.js'
import auditRoutes from './modules/audit/routes.js'
import { issuePasswordResetLink, mailPasswordResetLink } from './modules/auth/password-changes.js'
import authRoutes from './modules/auth/routes.js'
import billingRoutes from './modules/billing/routes.js'
import clientRoutes from './modules/clients/routes.js'
import clinicalRoutes from './modules/clinical/routes.js'
import { configuredDocumentStore } from './modules/documents/configured-store.js'
import documentRoutes from './modules/documents/routes.js'
import encounterRoutes from './modules/encounters/routes.js'
import eventRoutes from './modules/events/routes.js'
import { scopeRules } from './modules/fhir/access.js'
import { smartResourceScopes } from './modules/fhir/capability.js'
import bulkExportWorker from './modules/fhir/export/plugin.js'
import { resourceTypes } from './modules/fhir/resource-types.js'
import fhirRoutes from './modules/fhir/routes.js'
import messageRoutes from './modules/messages/routes.js'
import oidcRoutes, { embeddedIssuerMetadata } from './modules/oidc/routes.js'
import organizationRoutes from './modules/organizations/routes.js'
import patientRoutes from './modules/patients/routes.js'
import providerRoutes from './modules/providers/routes.js'
import providerScheduleRoutes from './modules/providers/schedule-routes.js'
import smartAppRoutes from './modules/smart-apps/routes.js'
import launchRoutes from './modules/smart-launch/routes.js'
import telehealthRoutes from './modules/telehealth/routes.js'
import patientAccountRoutes from './modules/users/patient-account-routes.js'
import userRoutes from './modules/users/routes.js'
import webhookDeliveryRoutes from './modules/webhooks/delivery-routes.js'
import webhookRoutes from './modules/webhooks/routes.js'
import type { TargetPolicy } from './outbox/targets.js'

interface AreaOptions {
  config: Config
  databases: Databases
  mailer: Mailer
  /** Where webhook and client JWKS URLs may point, and how their hosts are resolved. */
  targets: TargetPolicy
  /** The service's encryption key (the sign-in pages derive their forms' CSRF key from it). */
  encryptionKey: Buffer
}

/** Every functional area under its prefix, registered after the infrastructure it relies on. */
const areas: FastifyPluginAsync<AreaOptions> = async (
  app,
  { config, databases, mailer, targets, encryptionKey },
) => {
  const { identity } = config
  const store = await configuredDocumentStore(config.storage)
  const documents = {
    store,
    maxBytes: config.storage.maxUploadBytes,
    retentionDays: config.storage.documentRetentionDays,
  }
  const fhirTypes = resourceTypes({ mrnSystem: config.fhir.mrnSystem, base: config.fhir.base, documents })
  const exports = config.bulkExport
  // Before the routes: exports give way to the requests they serve.
  await app.register(bulkExportWorker, {
    run: exports.worker,
    db: databases.exports.db,
    close: databases.exports.close,
    replicas: databases.replicas,
    store,
    types: fhirTypes,
    embedded: databases.primary.kind === 'pglite',
    settings: { ...exports.jobs, pollIntervalMs: config.webhooks.pollIntervalMs },
  })
  const resetUrl = config.mail.passwordResetUrl
  await app.register(authRoutes, {
    prefix: '/api/auth',
    loginStyle: identity.loginResponseStyle,
    external: !identity.embeddedIssuer,
    mailer,
    passwordResetUrl: resetUrl,
  })
  const accounts = {
    external: !identity.embeddedIssuer,
    resetLinks: {
      issue: (db: Db, userId: number) => issuePasswordResetLink(db, userId, resetUrl),
      mail: (email: string, link: string) => mailPasswordResetLink(mailer, email, link),
    },
  }
  await app.register(userRoutes, { prefix: '/api/users', ...accounts })
  await app.register(clientRoutes, {
    prefix: '/api/clients',
    settings: {
      external: !identity.embeddedIssuer,
      secretOverlapSeconds: identity.clientSecretOverlapSeconds,
      // JWKS URLs of clients follow the webhook address policy (and its development allowances).
      jwksUrls: targets,
    },
  })
  await app.register(smartAppRoutes, {
    prefix: '/api',
    settings: {
      external: !identity.embeddedIssuer,
      // Apps' JWKS URLs follow the clients' (the webhook address policy).
      jwksUrls: targets,
      resourceTypes: new Set(fhirTypes.map((type) => type.type)),
      fhirBase: config.fhir.base,
    },
  })
  await app.register(patientRoutes, { prefix: '/api/patients' })
  await app.register(clinicalRoutes, { prefix: '/api/patients' })
  await app.register(patientAccountRoutes, { prefix: '/api/patients', ...accounts })
  await app.register(messageRoutes, { prefix: '/api/messages' })
  await app.register(telehealthRoutes, { prefix: '/api/telehealth', jitsi: config.telehealth.jitsi })
  await app.register(billingRoutes, { prefix: '/api/billing', settings: config.billing })
  await app.register(documentRoutes, {
    prefix: '/api',
    store,
    maxUploadBytes: config.storage.maxUploadBytes,
    retentionDays: config.storage.documentRetentionDays,
  })
  await app.register(webhookRoutes, {
    prefix: '/api/webhooks',
    settings: {
      targets,
      secretBox: app.secretBox,
      secretOverlapSeconds: config.webhooks.secretOverlapSeconds,
    },
  })
  await app.register(webhookDeliveryRoutes, { prefix: '/api/webhooks' })
  await app.register(eventRoutes, { prefix: '/api/events' })
  await app.register(organizationRoutes, { prefix: '/api/organizations' })
  await app.register(providerRoutes, { prefix: '/api/providers' })
  await app.register(providerScheduleRoutes, { prefix: '/api/providers' })
  await app.register(providerScheduleViewRoutes, { prefix: '/api/providers' })
  await app.register(appointmentRoutes, { prefix: '/api/appointments' })
  await app.register(encounterRoutes, { prefix: '/api/encounters' })
  await app.register(auditRoutes, { prefix: '/api/audit-events' })
  // The embedded issuer grants SMART's refresh scopes and the FHIR interface's resource scopes.
  const scopesSupported = [
    ...['openid', 'profile', 'email', 'online_access', 'offline_access'],
    ...smartResourceScopes(fhirTypes),
  ]
  await app.register(fhirRoutes, {
    prefix: '/fhir/R4',
    base: config.fhir.base,
    types: fhirTypes,
    authorization: app.identityProvider ?? embeddedIssuerMetadata(identity.tokenIssuer, scopesSupported),
    bodyLimit: config.server.bodyLimitBytes,
    requireIfMatch: config.sync.requireIfMatch,
    bundleLimits: config.fhir.bundleLimits,
    documents,
    bulkExport: { worker: app.bulkExports, store, retentionHours: exports.jobs.retentionHours },
  })
  await app.register(oidcRoutes, {
    prefix: `/realms/${identity.realm}`,
    issuerUrl: identity.tokenIssuer,
    publicClientId: identity.clientId,
    jwksUrls: targets,
    fhirScopes: scopeRules(fhirTypes),
    scopesSupported,
  })
  // SMART App Launch's authorization endpoint and pages, on the embedded issuer only.
  if (!app.identityProvider) {
    await app.register(launchRoutes, {
      prefix: `/realms/${identity.realm}`,
      issuerUrl: identity.tokenIssuer,
      fhirBase: config.fhir.base,
      fhirScopes: scopeRules(fhirTypes),
      encryptionKey,
    })
  }
}

// Not encapsulated: the export worker it registers decorates the app itself (`app.bulkExports`).
export default fp(areas, { name: 'areas', dependencies: ['database', 'auth', 'encryption', 'outbox'] })
