import { type Static, Type } from '@sinclair/typebox'

export const TelehealthEnv = Type.Object(
  {
    JITSI_DOMAIN: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9.-]+(:[0-9]+)?$',
        examples: ['meet.example.org'],
        description:
          'Host of the Jitsi Meet deployment, e.g. `meet.example.org`; without all three Jitsi settings joining a room answers 503',
      }),
    ),
    JITSI_APP_ID: Type.Optional(
      Type.String({
        minLength: 1,
        examples: ['ehr'],
        description: 'App id of Jitsi token authentication (`iss` of the room tokens)',
      }),
    ),
    JITSI_APP_SECRET: Type.Optional(
      Type.String({
        minLength: 32,
        description:
          'Secret of Jitsi token authentication (signs the room tokens, HS256; at least 32 characters)',
      }),
    ),
  },
  { title: 'Telehealth (Jitsi)' },
)

export interface TelehealthSettings {
  /** Only when all three Jitsi settings are present; otherwise joining answers 503, never an unsigned link. */
  jitsi: { domain: string; appId: string; appSecret: string } | undefined
}

export function telehealthSettings(env: Static<typeof TelehealthEnv>): TelehealthSettings {
  const { JITSI_DOMAIN: domain, JITSI_APP_ID: appId, JITSI_APP_SECRET: appSecret } = env
  return { jitsi: domain && appId && appSecret ? { domain, appId, appSecret } : undefined }
}
