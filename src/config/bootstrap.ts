import { type Static, Type } from '@sinclair/typebox'

export const BootstrapEnv = Type.Object(
  {
    ADMIN_EMAIL: Type.String({
      pattern: '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$',
      default: 'admin@example.com',
      description: 'E-mail of the bootstrap administrator (first start only)',
    }),
    ADMIN_PASSWORD: Type.Optional(
      Type.String({
        minLength: 12,
        description:
          'Password of the bootstrap administrator (first start only; at least 12 characters); unset = generated and printed once',
      }),
    ),
    BOOTSTRAP_ORGANIZATION: Type.String({
      minLength: 1,
      default: 'Default Practice',
      description:
        'Name of the bootstrap organization (first start only; group path derived: `/default-practice`)',
    }),
  },
  {
    title: 'Bootstrap',
    description: 'Read on the first start only, when the database holds no organization yet.',
  },
)

export interface BootstrapSettings {
  adminEmail: string
  /** Unset: one is generated and shown once. */
  adminPassword: string | undefined
  organization: { name: string; groupPath: string }
}

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '') || 'default'

export function bootstrapSettings(env: Static<typeof BootstrapEnv>): BootstrapSettings {
  return {
    adminEmail: env.ADMIN_EMAIL,
    adminPassword: env.ADMIN_PASSWORD,
    organization: { name: env.BOOTSTRAP_ORGANIZATION, groupPath: `/${slug(env.BOOTSTRAP_ORGANIZATION)}` },
  }
}
