import type { Transporter } from 'nodemailer'
import { type MailSettings, mailProblems } from '../config/mail.js'
import { ConfigError } from '../config.js'

interface Mail {
  to: string
  subject: string
  text: string
}

export interface Mailer {
  send(mail: Mail): Promise<void>
}

// nodemailer waits minutes by default; a stalled mail server must not hold a shutdown for that long.
// Query parameters of SMTP_URL (e.g. ?socketTimeout=60000&requireTLS=true) override these.
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

/** Sends through the SMTP server of `url` (smtp:// or smtps://, credentials in the URL). */
function smtpMailer(url: string, from: string): Mailer {
  // Loaded on first use: most deployments send a mail rarely, and start-up time matters more.
  let transport: Promise<Transporter> | undefined
  return {
    async send(mail) {
      transport ??= import('../runtime/on-demand/nodemailer.js').then(({ createTransport }) =>
        createTransport({ url, ...SMTP_TIMEOUTS }, { from }),
      )
      await (await transport).sendMail(mail)
    },
  }
}

interface MailLog {
  info(details: object, message: string): void
  debug(details: object, message: string): void
}

const LINK = /https?:\/\/\S+/g

/** `jane.doe@example.com` → `j***@example.com`: enough to tell mails apart, not to know who. */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@')
  if (at < 1) return '***'
  return `${address[0]}***${address.slice(at)}`
}

/**
 * For deployments without a mail server: nothing is sent. A password reset link is a credential
 * (whoever reads it can take over the account), so the info line says only that a mail was due, to
 * a masked address, with its subject; the links go to a `debug` line, and only when `logLinks`
 * (development: the embedded database, not production mode). The rest of the text is never logged,
 * since a mail body may one day carry names.
 */
function logMailer(log: MailLog, { logLinks }: { logLinks: boolean }): Mailer {
  return {
    async send({ to, subject, text }) {
      const recipient = maskAddress(to)
      log.info({ mail: { to: recipient, subject } }, 'mail not sent (MAIL_TRANSPORT=log)')
      if (logLinks)
        log.debug({ mail: { to: recipient, links: text.match(LINK) ?? [] } }, 'links of the mail not sent')
    },
  }
}

/**
 * The mailer the settings ask for. A shared database means a real deployment, where a reset mail
 * that silently goes nowhere (or into the log) is a problem: there, writing mails to the log must
 * be asked for explicitly. Throws a ConfigError naming the setting otherwise.
 */
export function configuredMailer(
  settings: Pick<MailSettings, 'transport' | 'smtpUrl' | 'from' | 'logLinks'>,
  log: MailLog,
): Mailer {
  const [problem] = mailProblems(settings)
  if (problem) throw new ConfigError(`Invalid configuration:\n  ${problem}`)
  if (settings.transport === 'smtp') return smtpMailer(settings.smtpUrl as string, settings.from)
  return logMailer(log, { logLinks: settings.logLinks })
}
