import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { App } from '../../../src/app.js'
import { buildTestApp } from '../../helpers/app.js'
import { bearer, newOrganization, patientBody } from '../../helpers/factories.js'
import { expectSameAndEmptyPatchChangeNothing } from '../../helpers/no-op-writes.js'

let app: App

beforeAll(async () => {
  app = await buildTestApp()
})
afterAll(async () => {
  await app.close()
})

const DEMOGRAPHICS = {
  preferredLanguage: 'es',
  race: { categories: ['2106-3', '2028-9'], detailed: ['2108-9', '2036-2'], text: 'White and Filipino' },
  ethnicity: { category: '2135-2', detailed: ['2148-5'] },
  birthSex: 'F',
  genderIdentity: '33791000087105',
}

async function clerk() {
  const org = await newOrganization(app)
  return { org, user: await org.user('FRONT_DESK') }
}

describe('patient demographics (US Core race, ethnicity, birth sex, gender identity, language)', () => {
  it('returns 201 with each field on create, the same on read, and empty ones as null', async () => {
    const { user } = await clerk()
    const created = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(user.token),
      payload: patientBody(DEMOGRAPHICS),
    })
    expect(created.statusCode, created.body).toBe(201)
    const expected = {
      preferredLanguage: 'es',
      race: { categories: ['2106-3', '2028-9'], detailed: ['2108-9', '2036-2'], text: 'White and Filipino' },
      ethnicity: { category: '2135-2', detailed: ['2148-5'], text: null },
      birthSex: 'F',
      genderIdentity: '33791000087105',
    }
    expect(created.json().data).toMatchObject(expected)
    const read = await app.inject({
      url: `/api/patients/${created.json().data.id}`,
      headers: bearer(user.token),
    })
    expect(read.json().data).toMatchObject(expected)

    const plain = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(user.token),
      payload: patientBody(),
    })
    expect(plain.json().data).toMatchObject({
      race: null,
      ethnicity: null,
      birthSex: null,
      genderIdentity: null,
    })
  })

  it('replaces (PUT) and patches (PATCH) them, keeps earlier versions, and a write of the same values changes nothing', async () => {
    const { org, user } = await clerk()
    const body = patientBody(DEMOGRAPHICS)
    const created = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(user.token),
      payload: body,
    })
    const url = `/api/patients/${created.json().data.id}`
    await expectSameAndEmptyPatchChangeNothing(app, org.id, user, url, body)

    const replaced = await app.inject({
      method: 'PUT',
      url,
      headers: bearer(user.token),
      payload: { ...body, race: { categories: ['UNK'] }, birthSex: 'UNK' },
    })
    expect(replaced.statusCode, replaced.body).toBe(200)
    expect(replaced.json().data).toMatchObject({
      version: 2,
      race: { categories: ['UNK'], detailed: [], text: null },
      birthSex: 'UNK',
    })
    const patched = await app.inject({
      method: 'PATCH',
      url,
      headers: { ...bearer(user.token), 'content-type': 'application/merge-patch+json' },
      payload: { ethnicity: null, genderIdentity: 'ASKU', race: { text: 'Declined to say more' } },
    })
    expect(patched.statusCode, patched.body).toBe(200)
    expect(patched.json().data).toMatchObject({
      version: 3,
      ethnicity: null,
      genderIdentity: 'ASKU',
      race: { categories: ['UNK'], text: 'Declined to say more' },
    })
    const first = await app.inject({ url: `${url}/versions/1`, headers: bearer(user.token) })
    expect(first.statusCode, first.body).toBe(200)
    expect(first.json().data).toMatchObject({ race: DEMOGRAPHICS.race, birthSex: 'F' })
  })

  it.each([
    ['an unknown OMB race category', { race: { categories: ['2108-9'] } }, 'race.categories.0'],
    ['a race without a category', { race: { categories: [] } }, 'race.categories'],
    [
      'an unknown detailed race code',
      { race: { categories: ['2106-3'], detailed: ['9999-9'] } },
      'race.detailed.0',
    ],
    [
      'an OMB category as detailed ethnicity',
      { ethnicity: { category: '2135-2', detailed: ['2135-2'] } },
      'ethnicity.detailed.0',
    ],
    ['an unknown ethnicity category', { ethnicity: { category: '2148-5' } }, 'ethnicity.category'],
    ['an unknown birth sex', { birthSex: 'X' }, 'birthSex'],
    ['an unknown gender identity', { genderIdentity: '12345' }, 'genderIdentity'],
    ['a language that is no BCP 47 tag', { preferredLanguage: 'english!' }, 'preferredLanguage'],
  ])('returns 422 VAL_001 naming the field for %s', async (_label, change, field) => {
    const { user } = await clerk()
    const response = await app.inject({
      method: 'POST',
      url: '/api/patients',
      headers: bearer(user.token),
      payload: patientBody(change),
    })
    expect(response.statusCode, response.body).toBe(422)
    expect(response.json()).toMatchObject({ success: false, error: { code: 'VAL_001' } })
    expect(response.json().error.fields.map((problem: { path: string }) => problem.path)).toContain(field)
  })
})
