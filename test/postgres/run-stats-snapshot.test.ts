/**
 * The runs page's cards on PostgreSQL count every run only when the database's snapshot moved since the last
 * count (postgres/reads.ts), as SQLite counts again only when its file changed. What must never happen is a
 * count kept past a change: a write in flight when the cards were counted, committed after, is counted at the
 * next read; so are a write by another connection, a delete, and a write that rolled back changes nothing.
 */
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const available = await postgresAvailable('the cards’ snapshot test');

describe.skipIf(!available)('the cards’ counts on PostgreSQL', () => {
  it('are kept while nothing committed, and counted again once anything did', async () => {
    const schema = await testSchema('wb_cards');
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name, poolSize: 2 });
    const other = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await other.connect();
    onTestFinished(async () => {
      await other.end();
      await store.close();
    });
    const queued = async () => (await store.runStats({ sinceSeconds: 0, claimTtlMs: 30_000 })).byStatus.queued;
    const insert = (id: string) =>
      other.query(
        `INSERT INTO runs (id, workflow, input_json, status, created_at, updated_at)
        VALUES ($1, 'wf', '{}', 'queued', 1, 1)`,
        [id],
      );

    await store.createRun({ id: 'a', workflow: 'wf', inputJson: '{}', totalSteps: 1 });
    expect(await queued()).toBe(1);
    expect(await queued()).toBe(1);

    // A write in flight while the cards count: not counted then, counted once it commits.
    await other.query('BEGIN');
    await insert('b');
    expect(await queued()).toBe(1);
    expect(await queued()).toBe(1);
    await other.query('COMMIT');
    expect(await queued()).toBe(2);

    // A write that rolled back leaves the count as it was; a delete by another connection is counted.
    await other.query('BEGIN');
    await insert('c');
    await other.query('ROLLBACK');
    expect(await queued()).toBe(2);
    await other.query(`DELETE FROM runs WHERE id = 'b'`);
    expect(await queued()).toBe(1);

    // Progress counters move with a commit too, and the clock-bound counts are read every time.
    await other.query(
      `INSERT INTO progress (run_id, step, state_json, updated_at, executed) VALUES ('a', 1, '{}', 1, 4)`,
    );
    const stats = await store.runStats({ sinceSeconds: 0, claimTtlMs: 30_000 });
    expect(stats).toMatchObject({ executed: 4, byStatus: { queued: 1 } });
  });
});
