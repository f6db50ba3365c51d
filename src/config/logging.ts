import { type Static, Type } from '@sinclair/typebox'

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export const LoggingEnv = Type.Object(
  {
    LOG_LEVEL: Type.Union(
      LEVELS.map((level) => Type.Literal(level)),
      { default: 'info', description: 'Least severe level written to the log; `silent` writes nothing' },
    ),
  },
  { title: 'Logging' },
)

export interface LoggingSettings {
  level: (typeof LEVELS)[number]
}

export function loggingSettings(env: Static<typeof LoggingEnv>): LoggingSettings {
  return { level: env.LOG_LEVEL }
}
