/**
 * The store's connections run without JIT. The runs list's statement carries a count of a run's committed rows
 * for a run with no progress row; with one run holding most of committed, PostgreSQL costs that count as a scan
 * of the table, the statement passes jit_above_cost, and every call was compiled: 0.7 – 1 s a runs page for a
 * read of a few milliseconds. A bare session plans the same statement with JIT; the store's plans it without.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const available = await postgresAvailable('the no-JIT test');

/** Whether EXPLAIN ANALYZE's JSON says the statement was JIT-compiled. */
const compiled = (rows: { 'QUERY PLAN': [{ JIT?: unknown }] }[]) => rows[0]!['QUERY PLAN'][0].JIT !== undefined;

describe.skipIf(!available)('the store’s PostgreSQL connections', () => {
  it('plan the runs list without JIT where a bare session compiles it', async () => {
    const schema = await testSchema('wb_jit');
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name });
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    try {
      for (let i = 0; i < 60; i++) {
        await store.createRun({ id: `run-${i}`, workflow: 'wf', inputJson: '{}', totalSteps: 1 });
      }
      await client.query(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step)
        SELECT 'run-0:' || i, 'run-0', '1', i, i FROM generate_series(1, 200000) i`);
      await client.query('ANALYZE');

      const sent: { text: string; values: unknown[] }[] = [];
      const query = store.pool.query.bind(store.pool);
      store.pool.query = ((config: pg.QueryConfig, values?: unknown[]) => {
        if (typeof config === 'object') sent.push({ text: config.text, values: config.values ?? [] });
        return query(config, values);
      }) as typeof store.pool.query;
      expect(await store.listRuns({ limit: 50, claimTtlMs: 30_000 })).toHaveLength(50);
      store.pool.query = query;
      const [list] = sent;
      expect(list!.text).toMatch(/^\s*WITH/);

      const explain = `EXPLAIN (ANALYZE, FORMAT JSON) ${list!.text}`;
      const jitHere = (await client.query<{ on: boolean }>('SELECT pg_jit_available() AS on')).rows[0]!.on;
      expect(compiled((await client.query(explain, list!.values)).rows)).toBe(jitHere);
      expect(compiled((await store.pool.query(explain, list!.values)).rows)).toBe(false);
    } finally {
      await client.end();
      await store.close();
    }
  });
});
