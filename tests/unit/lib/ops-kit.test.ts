import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { METRIC } from '../../../src/lib/service-metrics.js'

const catalogue = new Set<string>(Object.values(METRIC))
const dashboard = JSON.parse(readFileSync('ops/grafana/ehr-service.json', 'utf8'))
const alerts = readFileSync('ops/prometheus/alerts.yml', 'utf8')
const operations = readFileSync('docs/operations.md', 'utf8')

/** The service's metric names an expression uses, without the histogram series suffixes. */
const metricsIn = (text: string) =>
  [...text.matchAll(/\b(ehr_\w+|http_request_duration_seconds\w*)/g)].map(([name]) =>
    (name as string).replace(/_(bucket|count|sum)$/, ''),
  )

const dashboardExpressions = (): string[] =>
  dashboard.panels.flatMap((panel: { targets?: { expr: string }[] }) =>
    (panel.targets ?? []).map((target) => target.expr),
  )

describe('the operations kit', () => {
  it('dashboard and alerts use only metrics the service defines', () => {
    const used = [...dashboardExpressions().flatMap(metricsIn), ...metricsIn(alerts)]
    expect(used.length).toBeGreaterThan(20)
    expect(used.filter((name) => !catalogue.has(name))).toEqual([])
  })

  it('documents every metric in docs/operations.md and has a runbook entry for every alert', () => {
    for (const name of catalogue) expect(operations, name).toContain(`\`${name}\``)
    const alertNames = [...alerts.matchAll(/- alert: (\w+)/g)].map(([, name]) => name as string)
    expect(alertNames.length).toBeGreaterThanOrEqual(8)
    for (const name of alertNames) {
      expect(alerts).toContain(`runbook: docs/operations.md#${name.toLowerCase()}`)
      expect(operations, name).toMatch(new RegExp(`^### ${name}$`, 'm'))
    }
  })
})
