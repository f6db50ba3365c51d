// The app's redirect URI: fhirclient exchanges the code (with its PKCE verifier), then the app reads
// the patient in context and their observations, and can renew its access with the refresh token.
const show = (id, text) => {
  document.getElementById(id).textContent = text
}

const nameOf = (patient) => {
  const [name] = patient.name ?? []
  return name ? [...(name.given ?? []), name.family].filter(Boolean).join(' ') : '(no name)'
}

const describe = (observation) => {
  const code = observation.code?.text ?? observation.code?.coding?.[0]?.display ?? 'Observation'
  const value = observation.valueQuantity
  return value ? `${code}: ${value.value} ${value.unit ?? ''}`.trim() : code
}

async function showChart(client) {
  const patient = await client.patient.read()
  show('patient-name', nameOf(patient))
  show('patient-birth-date', patient.birthDate ?? '')
  show('patient-id', `Patient/${patient.id}`)
  show('user', client.getFhirUser() ?? '')
  const observations = await client.request(`Observation?patient=${patient.id}`, {
    pageLimit: 0,
    flat: true,
  })
  show('observation-count', String(observations.length))
  const list = document.getElementById('observations')
  list.replaceChildren(
    ...observations.map((observation) => {
      const item = document.createElement('li')
      item.textContent = describe(observation)
      return item
    }),
  )
}

async function renew(client) {
  const before = client.state.tokenResponse.access_token
  await client.refresh()
  // Read again with the new access token, to show it works.
  await client.patient.read()
  show('refresh-status', client.state.tokenResponse.access_token === before ? 'Same token' : 'Access renewed')
}

FHIR.oauth2
  .ready()
  .then(async (client) => {
    await showChart(client)
    show('status', 'Ready')
    const button = document.getElementById('refresh')
    button.disabled = false
    button.addEventListener('click', () =>
      renew(client).catch((error) => show('refresh-status', `Cannot renew: ${error.message}`)),
    )
  })
  .catch((error) => {
    show('status', `Cannot read the chart: ${error.message}`)
    document.getElementById('status').className = 'error'
  })
