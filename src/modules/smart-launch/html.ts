import { createHash } from 'node:crypto'

// The service's own pages (sign-in, consent, patient picker): plain HTML built on the server, one
// small stylesheet inline, no script and nothing from other hosts.

/** Markup already escaped or built by `html`, inserted as it is. */
export class SafeHtml {
  constructor(readonly markup: string) {}
  toString(): string {
    return this.markup
  }
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}
const escaped = (text: string) => text.replace(/[&<>"']/g, (character) => ESCAPES[character] as string)

type Inserted = SafeHtml | string | number | undefined | null | false | readonly Inserted[]

function insert(value: Inserted): string {
  if (value === undefined || value === null || value === false) return ''
  if (value instanceof SafeHtml) return value.markup
  if (Array.isArray(value)) return value.map(insert).join('')
  return escaped(String(value))
}

/** A template whose every inserted value is escaped, but for markup built by `html` itself. */
export function html(strings: TemplateStringsArray, ...values: Inserted[]): SafeHtml {
  return new SafeHtml(strings.reduce((markup, part, index) => markup + insert(values[index - 1]) + part))
}

const STYLESHEET = `
body{font-family:system-ui,sans-serif;background:#f4f6f8;color:#1b2430;margin:0}
main{max-width:32rem;margin:3rem auto;background:#fff;border:1px solid #d5dbe1;border-radius:8px;padding:2rem}
h1{font-size:1.4rem;margin-top:0}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=text],input[type=email],input[type=password],input[type=date],input[type=search]{width:100%;box-sizing:border-box;padding:.5rem;border:1px solid #8a96a3;border-radius:4px;font-size:1rem}
button{margin-top:1.25rem;padding:.6rem 1.2rem;font-size:1rem;border-radius:4px;border:1px solid #1f5fbf;background:#1f5fbf;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1f5fbf}
button:focus,input:focus,a:focus{outline:3px solid #f0a500;outline-offset:2px}
.error{background:#fdecea;border:1px solid #d93025;padding:.75rem;border-radius:4px}
.note{color:#4a5563;font-size:.9rem}
ul.access li{margin:.3rem 0}
table{border-collapse:collapse;width:100%;margin-top:1rem}
th,td{text-align:left;padding:.4rem;border-bottom:1px solid #d5dbe1}
caption{text-align:left;font-weight:600}
td button{margin:0;padding:.3rem .8rem}
.actions{display:flex;gap:1rem}
`.trim()

/** The Content-Security-Policy of every page: its own stylesheet, no script, never framed. */
export const PAGE_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLESHEET).digest('base64')}'`,
  "img-src 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** A whole page. */
export function page(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>${new SafeHtml(STYLESHEET)}</style>
</head>
<body>
<main>
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`.markup
}

/** Hidden inputs carrying name-value pairs through a form. */
export const hiddenFields = (fields: Readonly<Record<string, string | undefined>>): SafeHtml =>
  html`${Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}`
