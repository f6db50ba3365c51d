import { startSampleApp } from './server.js'

// The sample SMART app of docs/smart.md, on loopback: register `http://127.0.0.1:9090/index.html` as
// its redirect URI and `http://127.0.0.1:9090/launch.html?client_id=…` as its launch URL.
const port = Number(process.env.SAMPLE_APP_PORT ?? 9090)
const { origin } = await startSampleApp('127.0.0.1', port)
console.log(`Sample SMART app: ${origin}/launch.html`)
