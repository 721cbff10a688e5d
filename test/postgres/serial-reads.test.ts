/**
 * The runs page's reads on PostgreSQL are planned for one process (postgres/serial-plan.ts): the list, its tag
 * counts, the outside runs with only committed rows and the cards' two reads. A session that makes a
 * parallel plan free and asks for one wherever it is allowed (zero setup and tuple costs, force_parallel_mode)
 * plans the cards' status count with a Gather when the statement is sent bare, and each statement the store
 * sent with none.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { STATUS_SQL } from '../../lib/store/shared/sql';
import { type PlanNode, planNodes } from '../../scripts/explain-pick';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const available = await postgresAvailable('the serial plans test');

const PARALLEL_EAGER = [
  'parallel_setup_cost = 0',
  'parallel_tuple_cost = 0',
  'min_parallel_table_scan_size = 0',
  'min_parallel_index_scan_size = 0',
];

describe.skipIf(!available)('the runs page’s reads on PostgreSQL', () => {
  it('are planned without a Gather where a bare statement gets one', async () => {
    const schema = await testSchema('wb_serial');
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name });
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    try {
      for (let i = 0; i < 5; i++) {
        await store.createRun({ id: `run-${i}`, workflow: 'wf', inputJson: '{}', totalSteps: 1 });
        await store.tagRun(`run-${i}`, { tags: i === 0 ? ['rare'] : ['common'], metadata: { env: 'prod' } });
      }
      // An outside client's runs: one with progress, one with only a committed row.
      await client.query(
        `INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('outside-1', 1, '{}', 5)`,
      );
      await client.query(`INSERT INTO committed (idem_key, run_id, result_json, committed_at)
        VALUES ('outside-2:step:0', 'outside-2', '{}', 6)`);

      const sent: { text: string; values: unknown[] }[] = [];
      const query = store.pool.query.bind(store.pool);
      store.pool.query = ((config: pg.QueryConfig, values?: unknown[]) => {
        if (typeof config === 'object') sent.push({ text: config.text, values: config.values ?? [] });
        return query(config, values);
      }) as typeof store.pool.query;
      const ids = (runs: { id: string }[]) => runs.map((r) => r.id).sort();
      expect(ids(await store.listRuns({ limit: 50, claimTtlMs: 30_000 }))).toEqual([
        'outside-1',
        'outside-2',
        'run-0',
        'run-1',
        'run-2',
        'run-3',
        'run-4',
      ]);
      expect(ids(await store.listRuns({ limit: 50, claimTtlMs: 30_000, tags: ['rare'] }))).toEqual(['run-0']);
      // The cards count an outside client's run by its progress or its claim: outside-1, not outside-2.
      expect((await store.runStats({ sinceSeconds: 0, claimTtlMs: 30_000 })).byStatus).toMatchObject({
        queued: 5,
        idle: 1,
      });
      store.pool.query = query;

      const mode = (
        await client.query<{ name: string }>(
          `SELECT name FROM pg_settings WHERE name IN ('debug_parallel_query', 'force_parallel_mode')`,
        )
      ).rows[0]!.name;
      for (const setting of [...PARALLEL_EAGER, `${mode} = on`]) await client.query(`SET ${setting}`);
      const gathers = async (text: string, values: unknown[] = []) => {
        const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
          `EXPLAIN (FORMAT JSON) ${text}`,
          values,
        );
        return planNodes(rows[0]!['QUERY PLAN'][0].Plan).filter((n) => n['Node Type'].startsWith('Gather')).length;
      };

      expect(await gathers(STATUS_SQL('postgres'))).toBeGreaterThan(0);
      // The list and its outside runs with only committed rows; the tag's count and the list it narrows; the
      // cards' row counts and their clock-bound counts.
      expect(sent.map((s) => /^\s*(WITH RECURSIVE|WITH|SELECT)/.exec(s.text)![1])).toEqual([
        'WITH',
        'SELECT',
        'SELECT',
        'WITH',
        'SELECT',
        'SELECT',
      ]);
      for (const { text, values } of sent) expect(await gathers(text, values), text).toBe(0);
    } finally {
      await client.end();
      await store.close();
    }
  });
});
