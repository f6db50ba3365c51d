import type { AuthorizationParameters } from './authorization-request.js'
import { hiddenFields, html, page } from './html.js'

// The pages of the authorization endpoint. Every form posts back to it, carrying the authorization
// request's parameters and its CSRF token.

export interface FormContext {
  /** The authorization endpoint's path, the forms' action base. */
  action: string
  parameters: AuthorizationParameters
  /** The form's own hidden fields besides (the patient chosen). */
  fields?: Record<string, string>
  csrf: string
}

const form = (context: FormContext, step: string) => ({
  open: html`<form method="post" action="${context.action}/${step}">
${hiddenFields({ ...context.parameters, ...context.fields, csrf: context.csrf })}`,
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

/** A patient as the picker lists it. */
export interface PatientChoice {
  id: number
  name: string
  birthDate: string
  mrn: string
}

/** What the picker's search form was sent, shown again in it. */
export interface PickerTerms {
  name: string
  birthDate: string
  mrn: string
}

export interface PickerView {
  appName: string
  terms?: PickerTerms
  /** The patients listed, at most `limit` of `total` matching; none before the first search. */
  found?: { patients: PatientChoice[]; total: number; limit: number }
  error?: string
}

function pickerResults(context: FormContext, { patients, total, limit }: NonNullable<PickerView['found']>) {
  if (patients.length === 0) {
    return html`<p role="status">No patient found. Check the spelling, or search by birth date or MRN.</p>`
  }
  const { open, close } = form(context, 'patient')
  const summary =
    total > patients.length
      ? `${total} patients match; the first ${patients.length} are listed. Narrow the search to see the others.`
      : total === 1
        ? '1 patient found.'
        : `${total} patients found.`
  return html`<p role="status">${summary}</p>
${open}
<table>
<caption>Patients found (at most ${limit})</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Birth date</th><th scope="col">MRN</th><th scope="col">Choose</th></tr></thead>
<tbody>
${patients.map(
  (
    patient,
  ) => html`<tr><th scope="row">${patient.name}</th><td>${patient.birthDate}</td><td>${patient.mrn}</td>
<td><button type="submit" name="patient" value="${patient.id}" aria-label="Choose ${patient.name}, born ${patient.birthDate}">Choose</button></td></tr>
`,
)}</tbody>
</table>
${close}`
}

/** The patient picker: a search of the practice's patients, and the patients found, each to choose. */
export function pickerPage(context: FormContext, { appName, terms, found, error }: PickerView): string {
  const { open, close } = form(context, 'patient')
  return page(
    'Choose the patient',
    html`<p><strong>${appName}</strong> opens with one patient’s records. Find the patient by name, birth date or MRN: fill in at least one.</p>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
${open}
<label for="name">Name</label>
<input id="name" name="name" type="search" autocomplete="off" maxlength="100" aria-describedby="name-help" value="${terms?.name ?? ''}">
<p class="note" id="name-help">The beginning of each word of the name, for example “kowal ol”.</p>
<label for="birthDate">Birth date</label>
<input id="birthDate" name="birthDate" type="date" value="${terms?.birthDate ?? ''}">
<label for="mrn">MRN</label>
<input id="mrn" name="mrn" type="text" autocomplete="off" maxlength="32" value="${terms?.mrn ?? ''}">
<button type="submit">Search</button>
${close}
${found ? pickerResults(context, found) : ''}`,
  )
}

export function errorPage(title: string, message: string): string {
  return page(
    title,
    html`<p class="error" role="alert">${message}</p>
<p class="note">Nothing was sent back to the app. Close this page and contact the app’s maker or your practice.</p>`,
  )
}
