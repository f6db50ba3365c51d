import { describe, expect, it } from 'vitest'
import { createResponseChecker } from '../../helpers/contract.js'

const document = {
  paths: {
    '/api/things/{id}': {
      get: {
        responses: {
          '204': { description: 'No content' },
          '206': {
            content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
          '200': {
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['id'],
                  properties: { id: { type: 'integer' }, at: { type: 'string', format: 'date-time' } },
                },
              },
            },
          },
        },
      },
    },
  },
}

describe('the response contract checker', () => {
  const check = createResponseChecker(document)

  it('accepts a response that matches the document', () => {
    expect(check('GET', '/api/things/:id', 200, '{"id":1,"at":"2026-01-01T00:00:00.000Z"}')).toBeUndefined()
  })

  it('reports a body that breaks the schema, an undocumented status and an unknown route', () => {
    expect(check('GET', '/api/things/:id', 200, '{"id":"1"}')).toMatch(/integer/)
    expect(check('GET', '/api/things/:id', 200, '{"id":1,"at":"yesterday"}')).toMatch(/date-time/)
    expect(check('GET', '/api/things/:id', 418, '{}')).toBe('status 418 is not documented')
    expect(check('GET', '/api/things/:id', 204, '')).toBeUndefined()
    expect(check('GET', '/api/things/:id', 204, '{}')).toBe('status 204 must have no body')
    expect(check('GET', '/api/things/:id', 206, '%PDF-binary')).toBeUndefined()
    expect(check('POST', '/api/things/:id', 200, '{}')).toMatch(/not in the document/)
  })

  it('checks unrouted responses against the error envelope', () => {
    expect(
      check(
        'GET',
        undefined,
        404,
        '{"success":false,"message":"x","error":{"code":"RES_001","details":"d"}}',
      ),
    ).toBe(undefined)
    expect(check('GET', undefined, 404, '{"message":"Not Found"}')).toMatch(/unrouted/)
  })
})
