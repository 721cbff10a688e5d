/**
 * The unfiltered runs list on PostgreSQL is a named statement (postgres/run-list.ts statementName): each
 * connection parses it once, and PostgreSQL keeps one plan for it after its first calls. The pages it returns
 * are the same before and after that plan is kept; a filtered list is planned for its values each time and
 * leaves no statement behind; a limit that is not a whole number is refused before anything is sent.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { InvalidInputError } from '../../lib/errors';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const available = await postgresAvailable('the runs list plan test');

describe.skipIf(!available)('the unfiltered runs list on PostgreSQL', () => {
  it('is prepared once a connection and answers the same with the plan it keeps', async () => {
    const schema = await testSchema('wb_listplan');
    // One connection: the prepared statements read below are the list's own.
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name, poolSize: 1 });
    onTestFinished(() => store.close());
    for (let i = 0; i < 12; i++) {
      await store.createRun({ id: `run-${i}`, workflow: i % 2 ? 'odd' : 'even', inputJson: '{}', totalSteps: 1 });
    }
    await store.pool.query(
      `INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('outside', 1, '{}', 5)`,
    );
    const prepared = async () =>
      (
        await store.pool.query<{ name: string; generic: number; custom: number }>(
          `SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
           WHERE name LIKE 'waybill_runs_%' ORDER BY name`,
        )
      ).rows;

    const first = await store.listRuns({ limit: 5, claimTtlMs: 30_000 });
    expect(first).toHaveLength(5);
    const after = { updatedAt: first[4]!.updatedAt, id: first[4]!.id };
    const second = await store.listRuns({ limit: 5, claimTtlMs: 30_000, after });
    for (let i = 0; i < 8; i++) {
      expect(await store.listRuns({ limit: 5, claimTtlMs: 30_000 })).toEqual(first);
      expect(await store.listRuns({ limit: 5, claimTtlMs: 30_000, after })).toEqual(second);
    }
    // The first page and the later one, each called nine times: planned for the first five calls, then kept.
    const kept = await prepared();
    expect(kept.map(({ generic, custom }) => generic + custom)).toEqual([9, 9]);
    expect(kept.every(({ generic }) => generic > 0)).toBe(true);

    expect((await store.listRuns({ limit: 5, claimTtlMs: 30_000, workflow: 'odd' })).map((r) => r.workflow)).toEqual(
      Array(5).fill('odd'),
    );
    expect(await store.listRuns({ limit: 5, claimTtlMs: 30_000, status: 'queued' })).toHaveLength(5);
    expect(await prepared()).toHaveLength(2);

    for (const limit of [-1, 1.5, Number.NaN]) {
      await expect(store.listRuns({ limit, claimTtlMs: 30_000 })).rejects.toBeInstanceOf(InvalidInputError);
    }
  });
});
