import type { AuthorizationParameters } from './authorization-request.js'
import { hiddenFields, html, page } from './html.js'

// The pages of the authorization endpoint. Every form posts back to it, carrying the authorization
// request's parameters and its CSRF token.

export interface FormContext {
  /** The authorization endpoint's path, the forms' action base. */
  action: string
  parameters: AuthorizationParameters
  csrf: string
}

const form = (context: FormContext, step: string) => ({
  open: html`<form method="post" action="${context.action}/${step}">
${hiddenFields({ ...context.parameters, csrf: context.csrf })}`,
  close: html`</form>`,
})

export function signInPage(
  context: FormContext,
  { appName, error, username }: { appName: string; error?: string; username?: string },
): string {
  const { open, close } = form(context, 'sign-in')
  return page(
    'Sign in',
    html`<p><strong>${appName}</strong> asks to connect to your practice’s records. Sign in to continue.</p>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
${open}
<label for="username">Email</label>
<input id="username" name="username" type="email" autocomplete="username" required value="${username ?? ''}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
${close}`,
  )
}

export function passwordChangePage(
  context: FormContext,
  { username, error }: { username: string; error?: string },
): string {
  const { open, close } = form(context, 'password')
  return page(
    'Choose your password',
    html`<p>Your password is temporary. Choose your own to continue.</p>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
${open}
<input type="hidden" name="username" value="${username}">
<label for="current">Temporary password</label>
<input id="current" name="currentPassword" type="password" autocomplete="current-password" required>
<label for="new">New password</label>
<input id="new" name="newPassword" type="password" autocomplete="new-password" required minlength="12">
<button type="submit">Change password and continue</button>
${close}`,
  )
}

export function consentPage(
  context: FormContext,
  { appName, access, patient }: { appName: string; access: string[]; patient?: string },
): string {
  const { open, close } = form(context, 'consent')
  return page(
    `Allow ${appName}?`,
    html`<p><strong>${appName}</strong> asks to:</p>
<ul class="access">${access.map((line) => html`<li>${line}</li>`)}</ul>
${patient ? html`<p>Patient: <strong>${patient}</strong></p>` : ''}
<p class="note">You can revoke this later; the practice’s administrators can too.</p>
${open}
<div class="actions">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
${close}`,
  )
}

export function errorPage(title: string, message: string): string {
  return page(
    title,
    html`<p class="error" role="alert">${message}</p>
<p class="note">Nothing was sent back to the app. Close this page and contact the app’s maker or your practice.</p>`,
  )
}
