import { Readable } from 'node:stream'
import { request } from 'undici'
import { residentMemoryMb } from './processes.js'

const MB = 1024 * 1024
const SAMPLE_MS = 20

/** A multipart upload of one PDF-typed file of `sizeMb`, generated a megabyte at a time. */
function streamedUpload(sizeMb: number) {
  const boundary = `----ehr-bench-${Date.now()}`
  const chunk = Buffer.alloc(MB, 0x20)
  async function* parts(): AsyncGenerator<Buffer> {
    for (const [name, value] of [
      ['title', 'Benchmark upload'],
      ['category', 'IMAGING'],
    ]) {
      yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
    }
    yield Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="scan.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`,
    )
    for (let i = 0; i < sizeMb; i++) yield chunk
    yield Buffer.from(`\r\n--${boundary}--\r\n`)
  }
  return { contentType: `multipart/form-data; boundary=${boundary}`, body: Readable.from(parts()) }
}

/**
 * How much a large upload raises the service's resident memory: sampled every 20 ms while the
 * upload runs, the highest reading minus the one just before it.
 */
export async function uploadMemoryGrowthMb(
  service: { url: string; pid: number },
  token: string,
  patientId: number,
  sizeMb: number,
): Promise<{ growthMb: number; statusCode: number }> {
  const before = residentMemoryMb(service.pid)
  let highest = before
  const sampler = setInterval(() => {
    highest = Math.max(highest, residentMemoryMb(service.pid))
  }, SAMPLE_MS)
  try {
    const upload = streamedUpload(sizeMb)
    const response = await request(`${service.url}/api/patients/${patientId}/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': upload.contentType },
      body: upload.body,
    })
    await response.body.dump()
    highest = Math.max(highest, residentMemoryMb(service.pid))
    return { growthMb: highest - before, statusCode: response.statusCode }
  } finally {
    clearInterval(sampler)
  }
}
