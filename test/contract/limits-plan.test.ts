/**
 * Issue 27, the cost of a pick under limits: behind 50,000 finished runs of the workflow and 1,000 runs its
 * concurrency limit holds back, the statements a pick sends read the places from the running rows and the live
 * claims, and the starts from the window, each once, never the workflow's history. Plans, not timings: on SQLite
 * EXPLAIN QUERY PLAN of exactly what claimRun, limitUse and the wake watcher prepare (no statistics, as Waybill's
 * stores have none); on PostgreSQL EXPLAIN ANALYZE of exactly the candidate statement the pick sends, as inserted
 * and once analyzed, counting the rows each set read. bench/RESULTS.md has what the old plans cost.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../lib/clock';
import type { RunLimits } from '../../lib/domain/run-limits';
import type { Store, Wake } from '../../lib/store/contract';
import { postgresConnection } from '../../lib/store/postgres/connection';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { candidateStatement } from '../../lib/store/postgres/runs';
import { openSqliteStore } from '../../lib/store/sqlite';
import { wakeWatcher } from '../../lib/store/sqlite/notify';
import { type PlanNode, planNodes } from '../../scripts/explain-pick';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';
import { queryPlan, recordPrepared } from '../support/query-plans';
import { makeTempDir } from '../support/tmp';

const available = await postgresAvailable('the limits plan test');

const LIMITS: RunLimits = {
  concurrency: { limit: 1, key: 'customer' },
  rateLimit: { limit: 100, periodMs: 60_000, key: 'customer' },
};
const FINISHED = 50_000;
const HELD = 1000;

/** Publishes LIMITS for `percust`, as a worker does at its start: the limits every pick then holds runs by. */
async function publish(store: Store) {
  await store.registerWorker({ id: 'x', host: 'h', pid: 1, slots: 4 });
  await store.publishWorkflows('x', [
    { name: 'percust', description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits: LIMITS },
  ]);
}

/**
 * The seed, `now` the store's epoch seconds: FINISHED completed runs of `percust` started a day ago (500 customers),
 * acme's one place taken by `acme-run`, HELD acme runs queued ahead of `beta-0` in the pick's order.
 */
function seed(now: number, series: (n: number) => string): string[] {
  const cols = 'id, workflow, input_json, status, attempts, created_at, updated_at, started_at, finished_at, priority';
  return [
    `INSERT INTO runs (${cols}) SELECT 'old-' || i, 'percust', '{"customer":"c' || (i % 500) || '"}', 'completed', 1,
      ${now - 86400} + i * 0.001, ${now - 86400} + i * 0.001, ${now - 86400}, ${now - 86400}, 0 FROM ${series(FINISHED)}`,
    `INSERT INTO runs (id, workflow, input_json, status, owner, lease_expires_at, attempts, created_at, updated_at, started_at, priority)
      VALUES ('acme-run', 'percust', '{"customer":"acme"}', 'running', 'x', ${now} + 600, 1, ${now} - 10, ${now} - 10, ${now} - 10, 100)`,
    `INSERT INTO runs (${cols}) SELECT 'acme-' || i, 'percust', '{"customer":"acme"}', 'queued', 0,
      ${now} - 5 + i * 0.0001, ${now}, NULL, NULL, 100 FROM ${series(HELD)}`,
    `INSERT INTO runs (${cols}) VALUES ('beta-0', 'percust', '{"customer":"beta"}', 'queued', 0, ${now}, ${now}, NULL, NULL, 0)`,
  ];
}

/** What SQLite reads runs by (the pick's own walk `runs`, the places' `lr` and `lc`, the starts' `ls`). */
const runsReads = (plan: string[]) => new Set(plan.filter((d) => /^(SCAN|SEARCH) (runs|lr|lc|ls|es|le)\b/.test(d)));

describe('the pick under limits on SQLite', () => {
  it('reads places by status and claims, starts by their window, and the wake look finds a held queue idle', async () => {
    const dir = makeTempDir('waybill-limits-plan-');
    const clock = new ManualClock();
    const store = openSqliteStore({ path: dir.file('limits.db'), clock, synchronous: 'normal' });
    const prepared = recordPrepared();
    const watcher = wakeWatcher({ path: dir.file('limits.db'), clock });
    try {
      await publish(store);
      const now = clock.now() / 1000;
      const series = (n: number) =>
        `(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${n - 1}) SELECT i FROM s)`;
      for (const text of seed(now, series)) store.db.exec(text);

      // The wake watcher's look, before the pick takes beta and after: beta wakes, a queue all held does not.
      const wakes: Wake['kind'][] = [];
      watcher.subscribe((wake) => wakes.push(wake.kind));
      const look = async () => {
        await store.heartbeatWorker('x'); // a commit, as every renewal and step is
        await clock.tick(100);
        return wakes.splice(0);
      };
      await clock.tick(100);
      expect(wakes.splice(0)).toEqual(['listening']);
      expect(await prepared.during('look', look)).toEqual(['runnable']);

      const taken = await prepared.during('pick', () =>
        store.claimRun({ workerId: 'y', leaseMs: 30_000, workflows: ['percust'] }),
      );
      expect(taken?.id).toBe('beta-0');
      expect(await look()).toEqual([]);
      expect(await look()).toEqual([]);

      const use = await prepared.during('limitUse', () => store.limitUse('acme-0', LIMITS));
      expect(use).toMatchObject({ concurrency: { key: 'acme', running: 1 }, rateLimit: { key: 'acme', started: 1 } });

      const texts = (label: string) =>
        [...prepared.texts].filter(([text, by]) => by === label && /limit_places_0|\bh\.k\b/.test(text));
      const [[pick] = []] = texts('pick');
      const [[wake] = []] = texts('look');
      const [[reason] = []] = texts('limitUse');
      expect(pick).toBeDefined();
      expect(wake).toBeDefined();
      expect(reason).toBeDefined();
      const places = 'SEARCH lr USING INDEX runs_status_updated (status=?)';
      const claimed = 'SEARCH lc USING INDEX sqlite_autoindex_runs_1 (id=?)';
      const starts = 'SEARCH ls USING INDEX runs_started (workflow=? AND started_at>?)';
      // The starts a retry or a rerun cleared: their window's range, each one's run by its key.
      const earlier = [
        'SEARCH es USING INDEX earlier_starts_workflow (workflow=? AND started_at>?)',
        'SEARCH le USING INDEX sqlite_autoindex_runs_1 (id=?)',
      ];
      for (const text of [pick!, wake!]) {
        const plan = queryPlan(store.db, text);
        // The walk, the running rows, each live claim's run, the window's starts: nothing by workflow alone.
        expect(runsReads(plan), plan.join('\n')).toEqual(
          new Set(['SCAN runs USING INDEX runs_runnable', places, claimed, starts, ...earlier]),
        );
        // Read once a statement: the places are materialized, and a candidate's key is looked up in sets.
        expect(plan).toContain('MATERIALIZE limit_places_0');
        expect(plan.filter((d) => /runs_workflow_updated/.test(d))).toEqual([]);
      }
      const limitUsePlan = queryPlan(store.db, reason!);
      expect(runsReads(limitUsePlan)).toEqual(
        new Set(['SEARCH runs USING INDEX sqlite_autoindex_runs_1 (id=?)', places, claimed, starts, ...earlier]),
      );
      // The held run's place in its rate key's line (rate-line-sql.ts) too: read from the queued runs, not the history.
      const line = [...prepared.texts].filter(([text, by]) => by === 'limitUse' && /\bla\.status\b/.test(text));
      expect(line).toHaveLength(1);
      expect(queryPlan(store.db, line[0]![0])).toContain('SEARCH la USING INDEX runs_status_updated (status=?)');

      // A place frees: the look after that commit wakes, and the pick takes the oldest held run.
      expect(await store.finishRun('acme-run', 'x', { status: 'completed' })).toBe(true);
      await clock.tick(100);
      expect(wakes.splice(0)).toEqual(['runnable']);
      expect((await store.claimRun({ workerId: 'y', leaseMs: 30_000, workflows: ['percust'] }))?.id).toBe('acme-0');
    } finally {
      watcher.close();
      prepared.restore();
      await store.close();
      dir.remove();
    }
  });
});

/**
 * What the plan read of runs under `alias` (the places' fenced subquery reads `runs`, the starts `ls`): the
 * indexes, a bitmap scan's included, and the rows.
 */
function reads(plan: PlanNode, alias: string) {
  const nodes = planNodes(plan).filter((n) => n['Relation Name'] === 'runs' && n.Alias === alias);
  const indexes = new Set(
    nodes.flatMap((n) => planNodes(n).map((m) => m['Index Name'])).filter((name) => name !== undefined),
  );
  const rows = nodes.reduce((sum, n) => sum + Number(n['Actual Rows']) * Number(n['Actual Loops']), 0);
  return { scans: nodes.map((n) => n['Node Type']), indexes: [...indexes], rows };
}

describe.skipIf(!available)('the pick under limits on PostgreSQL', () => {
  it('reads the places from the running rows and the starts from the window, as inserted and analyzed', async () => {
    const schema = await testSchema('wb_limits_plan');
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name });
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    try {
      await publish(store);
      const now = (await client.query<{ now: number }>('SELECT extract(epoch from now())::float8 AS now')).rows[0]!.now;
      for (const text of seed(now, (n) => `generate_series(0, ${n - 1}) AS i`)) await client.query(text);
      const c = postgresConnection(store.pool, systemClock);
      const { text, values } = c.text(candidateStatement(c, { workflows: ['percust'] }, { percust: LIMITS }));

      for (const when of ['as inserted', 'analyzed']) {
        if (when === 'analyzed') await client.query('ANALYZE runs');
        await client.query('BEGIN');
        let plan: PlanNode;
        let taken: string | undefined;
        try {
          const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
            `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
            values,
          );
          plan = explained.rows[0]!['QUERY PLAN'][0].Plan;
          taken = (await client.query<{ id: string }>(text, values)).rows[0]?.id;
        } finally {
          await client.query('ROLLBACK');
        }
        expect(taken, when).toBe('beta-0');
        // Each read of runs: node, alias, index (a bitmap scan's under it): what a failure prints.
        const onRuns = planNodes(plan)
          .filter((n) => n['Relation Name'] === 'runs')
          .map(
            (n) =>
              `${n['Node Type']} ${n.Alias} ${planNodes(n)
                .map((m) => m['Index Name'] ?? '')
                .join(' ')}`,
          );
        const why = `${when}: ${onRuns.join('; ')}`;
        expect(
          onRuns.filter((line) => line.startsWith('Seq Scan')),
          why,
        ).toEqual([]);
        // The places: the one running run, read by status (the 50,000 finished and 1,000 queued never), and each
        // live claim's run by its key (none here: that subplan never runs). The starts: the one start within the
        // minute, by runs_started. The walk itself (`p`) is the plain pick's (test/postgres/pick-plan.test.ts).
        expect(reads(plan, 'runs'), why).toMatchObject({ indexes: ['runs_status_updated'], rows: 1 });
        expect(reads(plan, 'ls'), why).toMatchObject({ indexes: ['runs_started'], rows: 1 });
        const claimed = onRuns.filter((line) => / lc(_\d+)? /.test(line));
        expect(claimed.length, why).toBeGreaterThan(0);
        expect(
          claimed.every((line) => line.endsWith('runs_pkey')),
          why,
        ).toBe(true);
      }
      expect((await store.claimRun({ workerId: 'y', leaseMs: 30_000, workflows: ['percust'] }))?.id).toBe('beta-0');
    } finally {
      await client.end();
      await store.close();
    }
  }, 120_000);
});
