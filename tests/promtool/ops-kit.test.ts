import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const directory = mkdtempSync(path.join(tmpdir(), 'ehr-ops-kit-'))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

describe('the Grafana dashboard', () => {
  it('has only PromQL expressions that Prometheus parses', () => {
    const dashboard = JSON.parse(readFileSync('ops/grafana/ehr-service.json', 'utf8'))
    const expressions: string[] = dashboard.panels.flatMap((panel: { targets?: { expr: string }[] }) =>
      (panel.targets ?? []).map((target) => target.expr),
    )
    expect(expressions.length).toBeGreaterThan(20)
    // Grafana's variables replaced by values Prometheus accepts; each expression becomes a rule.
    const rules = expressions.map((expr, index) => ({
      record: `dashboard:expression_${index}`,
      expr: expr.replaceAll('$__rate_interval', '5m').replaceAll('$instance', '.*'),
    }))
    const file = path.join(directory, 'dashboard-rules.json')
    writeFileSync(file, JSON.stringify({ groups: [{ name: 'dashboard', rules }] }))
    const check = spawnSync('promtool', ['check', 'rules', file], { encoding: 'utf8', timeout: 10_000 })
    expect(check.stderr).toBe('')
    expect(check.stdout).toContain(`SUCCESS: ${rules.length} rules found`)
    expect(check.status).toBe(0)
  })
})
