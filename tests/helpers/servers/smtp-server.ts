import { createServer, type Socket } from 'node:net'

export interface ReceivedMail {
  from: string
  to: string[]
  /** Headers and body as received (dot-stuffing undone). */
  data: string
}

/** The decoded text body of a single-part mail (7bit or quoted-printable, as nodemailer sends text). */
export function mailText(mail: ReceivedMail): string {
  const [head = '', ...rest] = mail.data.split('\r\n\r\n')
  const body = rest.join('\r\n\r\n')
  if (!/^content-transfer-encoding: *quoted-printable/im.test(head)) return body
  return body
    .replace(/=\r\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
}

/** A header of a received mail, e.g. `header(mail, 'To')`. */
export function mailHeader(mail: ReceivedMail, name: string): string | undefined {
  const head = mail.data.split('\r\n\r\n')[0] ?? ''
  return head.match(new RegExp(`^${name}: *(.*)$`, 'im'))?.[1]
}

/**
 * Just enough of an SMTP server on 127.0.0.1 to receive nodemailer's mail: greeting, EHLO/HELO,
 * MAIL FROM, RCPT TO, DATA, RSET, NOOP, QUIT. No TLS, no AUTH. `rejectRecipients` answers every
 * RCPT TO with 550, to exercise the service's handling of a refused mail.
 */
export async function startSmtpServer(options: { rejectRecipients?: boolean } = {}) {
  const received: ReceivedMail[] = []
  const rejected: string[] = []
  const sockets = new Set<Socket>()

  const server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    let buffer = ''
    let inData = false
    let envelope: { from: string; to: string[] } = { from: '', to: [] }
    const reply = (line: string) => socket.write(`${line}\r\n`)

    const command = (line: string) => {
      const verb = line.slice(0, 4).toUpperCase()
      if (verb === 'EHLO' || verb === 'HELO') reply('250 127.0.0.1')
      else if (verb === 'MAIL') {
        envelope = { from: line.replace(/^MAIL FROM: *<?([^>]*)>?.*$/i, '$1'), to: [] }
        reply('250 OK')
      } else if (verb === 'RCPT') {
        const recipient = line.replace(/^RCPT TO: *<?([^>]*)>?.*$/i, '$1')
        if (options.rejectRecipients) {
          rejected.push(recipient)
          // Quoting the address, as Postfix does: the client's error message then carries it.
          return reply(`550 5.1.1 <${recipient}>: Recipient address rejected`)
        }
        envelope.to.push(recipient)
        reply('250 OK')
      } else if (verb === 'DATA') {
        inData = true
        reply('354 End data with <CR><LF>.<CR><LF>')
      } else if (verb === 'RSET' || verb === 'NOOP') reply('250 OK')
      else if (verb === 'QUIT') {
        reply('221 Bye')
        socket.end()
      } else reply('502 Command not implemented')
    }

    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8')
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n')
          if (end === -1) return
          const data = buffer.slice(0, end).replace(/^\.\./gm, '.')
          buffer = buffer.slice(end + 5)
          inData = false
          received.push({ ...envelope, data })
          reply('250 OK: queued')
          continue
        }
        const newline = buffer.indexOf('\r\n')
        if (newline === -1) return
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 2)
        command(line)
      }
    })
    reply('220 127.0.0.1 test SMTP')
  })

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    /** Every mail accepted so far, oldest first. */
    received,
    /** Recipients refused with `rejectRecipients`. */
    rejected,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
