// The app's launch URL. An EHR opens it with `iss` and `launch` (EHR launch); a user opens it with
// `iss` alone (standalone launch), and the EHR asks them for the patient. `client_id` is the one the
// EHR gave the app at registration, kept in the launch URL so one copy of the app serves any EHR.
const parameters = new URLSearchParams(window.location.search)
const launchedByEhr = parameters.has('launch')
const data = ['openid', 'fhirUser', 'offline_access', 'patient/Patient.rs', 'patient/Observation.rs']

FHIR.oauth2
  .authorize({
    clientId: parameters.get('client_id') ?? '',
    // An EHR launch names its context with `launch`; a standalone one asks for a patient to be chosen.
    scope: [launchedByEhr ? 'launch' : 'launch/patient', ...data].join(' '),
    redirectUri: 'index.html',
    pkceMode: 'required',
  })
  .catch((error) => {
    const status = document.getElementById('status')
    status.textContent = `Cannot launch: ${error.message}`
    status.className = 'error'
  })
