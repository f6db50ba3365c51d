import { type Static, Type } from '@sinclair/typebox'

export const MailEnv = Type.Object(
  {
    SMTP_URL: Type.Optional(
      Type.String({
        pattern: '^smtps?://',
        examples: ['smtp://mailer:secret@mail.example.com:587'],
        description:
          'Mail server for password reset mails, `smtp://user:pass@host:587` or `smtps://…:465`; query parameters are passed to nodemailer (e.g. `?requireTLS=true`). Unset = no mail is sent (see `MAIL_TRANSPORT`); required with `DATABASE_URL` unless `MAIL_TRANSPORT=log`',
      }),
    ),
    MAIL_TRANSPORT: Type.Optional(
      Type.Union([Type.Literal('smtp'), Type.Literal('log')], {
        examples: ['log'],
        description:
          'How password reset mails leave: `smtp` (through `SMTP_URL`, which it requires) or `log` (not sent: the log records that a mail was due, to a masked address; the reset link itself only at `debug` level, and never in production mode, i.e. with `DATABASE_URL` or `NODE_ENV=production`). Unset = `smtp` when `SMTP_URL` is set; otherwise `log` with the embedded database, while with `DATABASE_URL` the service refuses to start until `SMTP_URL` or `MAIL_TRANSPORT=log` is set',
      }),
    ),
    NODE_ENV: Type.Optional(
      Type.String({
        examples: ['production'],
        description:
          '`production` (the Docker image sets it) is production mode: no password reset link is ever written to the log, whatever `LOG_LEVEL` says',
      }),
    ),
    MAIL_FROM: Type.String({
      pattern: '@',
      default: 'EHR Service <no-reply@localhost>',
      description: 'Sender of the password reset mails',
    }),
    PASSWORD_RESET_URL: Type.Optional(
      Type.String({
        pattern: '^https?://[^\\s]+$',
        examples: ['https://ehr.example.com/reset-password'],
        description:
          'The page a reset mail links to, with `?token=…` appended; the page posts the token to `/api/auth/reset-password`. Unset = `$PUBLIC_URL/reset-password`',
      }),
    ),
  },
  { title: 'Mail', description: 'Password reset mails.' },
)

export interface MailSettings {
  /** Unset: none chosen, which a shared database refuses (a reset mail that silently goes nowhere must be asked for explicitly). */
  transport: 'smtp' | 'log' | undefined
  smtpUrl: string | undefined
  from: string
  /** The page a password reset mail links to, with `?token=…` appended. */
  passwordResetUrl: string
  /** Whether links of mails not sent may reach the log (at debug level): never in production mode. */
  logLinks: boolean
}

export function mailProblems(settings: Pick<MailSettings, 'transport' | 'smtpUrl'>): string[] {
  if (settings.transport === 'smtp' && settings.smtpUrl === undefined)
    return ['SMTP_URL: required when MAIL_TRANSPORT=smtp']
  if (settings.transport === undefined)
    return [
      'SMTP_URL: required when DATABASE_URL is set (password reset mails must reach users); set MAIL_TRANSPORT=log to send none and only log them',
    ]
  return []
}

/**
 * MAIL_TRANSPORT, or what leaving it unset means: `smtp` with SMTP_URL, else `log` with the embedded
 * database; with a shared one, none.
 */
export function mailTransport(
  env: Pick<Static<typeof MailEnv>, 'MAIL_TRANSPORT' | 'SMTP_URL'>,
  sharedDatabase: boolean,
): MailSettings['transport'] {
  return env.MAIL_TRANSPORT ?? (env.SMTP_URL ? 'smtp' : sharedDatabase ? undefined : 'log')
}

export function mailSettings(
  env: Static<typeof MailEnv>,
  { publicUrl, sharedDatabase }: { publicUrl: string; sharedDatabase: boolean },
): MailSettings {
  return {
    transport: mailTransport(env, sharedDatabase),
    smtpUrl: env.SMTP_URL,
    from: env.MAIL_FROM,
    passwordResetUrl: env.PASSWORD_RESET_URL ?? `${publicUrl}/reset-password`,
    logLinks: !sharedDatabase && env.NODE_ENV !== 'production',
  }
}
