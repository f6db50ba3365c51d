import type { Transporter } from 'nodemailer'

export interface Mail {
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
export function smtpMailer(url: string, from: string): Mailer {
  // Loaded on first use: most deployments send a mail rarely, and start-up time matters more.
  let transport: Promise<Transporter> | undefined
  return {
    async send(mail) {
      transport ??= import('nodemailer').then(({ createTransport }) =>
        createTransport({ url, ...SMTP_TIMEOUTS }, { from }),
      )
      await (await transport).sendMail(mail)
    },
  }
}

interface InfoLog {
  info(details: object, message: string): void
}

const LINK = /https?:\/\/\S+/g

/**
 * For deployments without a mail server (development): logs the recipient, the subject and the
 * links of each mail. The rest of the text is left out, since a mail body may one day carry names.
 */
export function logMailer(log: InfoLog): Mailer {
  return {
    async send({ to, subject, text }) {
      log.info(
        { mail: { to, subject, links: text.match(LINK) ?? [] } },
        'mail not sent (no SMTP_URL); logged',
      )
    },
  }
}
