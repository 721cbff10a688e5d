/**
 * The run pick behind a long history (#17): with a million finished runs, a hundred thousand decided waits and a
 * thousand stopped workers in the schema, and a live queue (1,000 queued, 100 running under live leases, one asleep), the statement claimRun
 * sends is planned over runs_runnable — in the plan for the values at hand and in
 * the generic plan a named statement may settle on — and no node reads runs by a Seq Scan; the pick then takes
 * the oldest queued run, reading a handful of buffers. scripts/explain-pick.ts prints the same plans for the README.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock';
import { postgresConnection } from '../../lib/store/postgres/connection';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { explainPick, HISTORY, type PlanNode, planNodes, seedHistory } from '../../scripts/explain-pick';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const available = await postgresAvailable('the pick plan test');

/** What a plan reads runs by: [node type, index] for each node on runs. */
const onRuns = (plan: PlanNode) =>
  planNodes(plan)
    .filter((n) => n['Relation Name'] === 'runs')
    .map((n) => [n['Node Type'], n['Index Name'] ?? null]);

describe.skipIf(!available)('the run pick on PostgreSQL with a million finished runs', () => {
  it('walks runs_runnable, never a Seq Scan on runs, for the bound values and the generic plan alike', async () => {
    const schema = await testSchema('wb_plan');
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name });
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    try {
      await seedHistory(client, schema.name, HISTORY);
      const counts = await schema.admin.query<{ status: string; n: number }>(
        `SELECT status, count(*)::int AS n FROM ${schema.t('runs')} GROUP BY status ORDER BY status`,
      );
      expect(counts).toEqual([
        { status: 'completed', n: 1_000_000 },
        { status: 'queued', n: 1000 },
        { status: 'running', n: 100 },
        { status: 'waiting', n: 1 },
      ]);
      expect(await schema.admin.count(`SELECT count(*) FROM ${schema.t('workers')} WHERE stopped_at IS NOT NULL`)).toBe(
        1000,
      );

      const plans = await explainPick(client, postgresConnection(store.pool, systemClock));
      for (const [name, plan] of [
        ['custom', plans.custom],
        ['generic', plans.generic],
      ] as const) {
        const reads = onRuns(plan);
        // The pick's own scan is the partial index; the UPDATE finds its row by primary key.
        expect(reads, `${name} plan: ${JSON.stringify(plan)}`).toContainEqual(['Index Scan', 'runs_runnable']);
        expect(reads.filter(([type]) => type === 'Seq Scan')).toEqual([]);
        expect(reads.filter(([type]) => type === 'Bitmap Heap Scan')).toEqual([]);
        // No worker is read at all (a stopped owner's runs have their leases passed), and a waiting run's wait is
        // found by the run's key or among the open waits (waits_open_due, which holds no decided one): never by
        // reading the waits' history. Which of the two is the planner's to weigh: here one wait is open.
        expect(planNodes(plan).filter((n) => n['Relation Name'] === 'workers')).toEqual([]);
        const waitReads = planNodes(plan)
          .filter((n) => n['Relation Name'] === 'waits')
          .map((n) => [n['Node Type'], n['Index Name'] ?? null]);
        expect(waitReads).toHaveLength(1);
        expect([
          ['Index Scan', 'waits_run_id_kind_name_pk'],
          ['Index Scan', 'waits_open_due'],
        ]).toContainEqual(waitReads[0]);
      }
      // Executed (and rolled back): the oldest queued run, past 100 live runs and a sleeping one, few buffers read.
      expect(plans.analyzed).toMatch(/Index Scan using runs_runnable on runs p/);
      // The top node's buffers (the first Buffers line) are the whole statement's.
      const top = /Buffers: shared((?: \w+=\d+)+)/.exec(plans.analyzed)?.[1] ?? '';
      const buffers = [...top.matchAll(/(?:hit|read)=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
      expect(buffers).toBeGreaterThan(0);
      expect(buffers).toBeLessThan(100);

      // And the store itself takes that run.
      expect(await store.claimRun({ workerId: 'w-live-1', leaseMs: 30_000, workflows: ['wf'] })).toMatchObject({
        id: 'queued-000001',
        status: 'running',
      });
    } finally {
      await client.end();
      await store.close();
    }
  }, 180_000);
});
