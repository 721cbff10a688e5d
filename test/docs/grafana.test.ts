/**
 * docs/grafana/waybill.json, the Grafana dashboard of docs/operations.md: a dashboard model Grafana imports
 * (unique panel ids, panels inside the 24-column grid and not overlapping, every query on the Prometheus
 * datasource variable, every variable it uses defined), and every PromQL expression names only series that
 * Waybill exports. What it exports is read from real scrapes: a worker process's --health-port /metrics, and
 * the dashboard's /api/metrics route handler, both over one SQLite file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/engine/log';
import type { Store } from '../../lib/store/contract';
import { BIN, ROOT } from '../cli/support';
import { spawnCommand } from '../support/child';
import { seriesNames } from '../support/prometheus';
import { makeTempDir } from '../support/tmp';
import { until } from '../support/until';

const dir = makeTempDir('waybill-grafana-');
const DB = `file:${dir.file('w.db')}`;
// The route reads its store through lib/config, like the server: set before the first import of it.
process.env.DATABASE_URL = DB;
(globalThis as { waybillServerLog?: unknown }).waybillServerLog = createLogger({ component: 'web' }, () => undefined);
const { GET } = await import('../../app/api/metrics/route');
const cache = globalThis as { waybillStore?: Promise<unknown> };

afterAll(async () => {
  await ((await cache.waybillStore) as Store | undefined)?.close();
  dir.remove();
});

interface Target {
  refId: string;
  expr: string;
  datasource: { type: string; uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  templating: { list: { name: string; type: string; query: string }[] };
  panels: Panel[];
}

const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs/grafana/waybill.json'), 'utf8')) as Dashboard;
const queries = dashboard.panels.filter((p) => p.type !== 'row');
const exprs = queries.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

/** Grafana's reference to the dashboard's datasource variable, as every query names its datasource. */
const DATASOURCE = ['$', '{datasource}'].join('');

/** PromQL's words that are not series: the functions and aggregations the dashboard uses, and their modifiers. */
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'count',
  'rate',
  'increase',
  'histogram_quantile',
  'by',
  'without',
]);

/** The series an expression selects: its identifiers, past strings, label matchers, ranges and by-lists. */
function seriesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without)\s*\([^)]*\)/g, '');
  return [...bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)].map((m) => m[0]).filter((w) => !PROMQL_WORDS.has(w));
}

describe('the Grafana dashboard', () => {
  it('is a dashboard model Grafana loads: ids, grid, datasource variable', () => {
    expect(dashboard).toMatchObject({ title: 'Waybill', uid: 'waybill', schemaVersion: expect.any(Number) });
    expect(dashboard.templating.list).toContainEqual(
      expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }),
    );
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of dashboard.panels) {
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
      for (const q of dashboard.panels) {
        if (q === p) continue;
        const apart =
          p.gridPos.x + p.gridPos.w <= q.gridPos.x ||
          q.gridPos.x + q.gridPos.w <= p.gridPos.x ||
          p.gridPos.y + p.gridPos.h <= q.gridPos.y ||
          q.gridPos.y + q.gridPos.h <= p.gridPos.y;
        expect(apart, `${p.title} overlaps ${q.title}`).toBe(true);
      }
    }
    for (const p of queries) {
      expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: DATASOURCE });
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      const refIds = p.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
      for (const t of p.targets!) expect(t.datasource, p.title).toEqual(p.datasource);
    }
    const variables = new Set(dashboard.templating.list.map((v) => v.name));
    for (const { panel, expr } of exprs) {
      for (const [, name] of expr.matchAll(/\$(\w+)/g))
        expect(name === '__rate_interval' || name === '__range' || variables.has(name!), `${panel}: $${name}`).toBe(
          true,
        );
      // Brackets balanced: an expression cut short would not parse.
      for (const [open, close] of ['()', '{}', '[]'])
        expect(expr.split(open!).length, `${panel}: ${expr}`).toBe(expr.split(close!).length);
    }
  });

  it('queries only series Waybill exports, by real scrapes of a worker and of the dashboard', async () => {
    const worker = spawnCommand(
      process.execPath,
      [BIN, '--db', DB, 'worker', '--id', 'grafana', '--health-port', '0'],
      {
        env: { WAYBILL_HEALTH_HOST: '127.0.0.1' },
      },
    );
    const base = await until(
      `the worker's health URL (${worker.stderr()})`,
      () => /"msg":"health and metrics on (http:\/\/[^"]+)"/.exec(worker.stderr())?.[1],
    );
    const workerText = await (await fetch(`${base}/metrics`)).text();
    worker.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
    const response = await GET(
      new Request('http://127.0.0.1:3000/api/metrics', { headers: { host: '127.0.0.1:3000' } }),
    );
    expect(response.status).toBe(200);
    const exported = new Set([...seriesNames(workerText), ...seriesNames(await response.text())]);

    const unknown = exprs.flatMap(({ panel, expr }) =>
      seriesOf(expr)
        .filter((name) => !exported.has(name))
        .map((name) => `${panel}: ${name}`),
    );
    expect(unknown).toEqual([]);
    // What the dashboard is for, each queried at least once.
    const used = new Set(exprs.flatMap(({ expr }) => seriesOf(expr)));
    for (const name of [
      'waybill_runs',
      'waybill_steps_total',
      'waybill_commit_duration_seconds_bucket',
      'waybill_step_duration_seconds_bucket',
      'waybill_model_tokens_total',
      'waybill_model_cost_usd_total',
      'waybill_worker_heartbeat_age_seconds',
      'waybill_worker_runs',
    ])
      expect(used, name).toContain(name);
    // Quantiles of a histogram are taken over the rate of its buckets, summed by le.
    for (const { panel, expr } of exprs.filter((e) => e.expr.includes('histogram_quantile')))
      expect(expr, panel).toMatch(/^histogram_quantile\(0\.\d+, sum by \(le\) \(rate\(\w+_bucket(\{[^}]*\})?\[/);
  });
});
