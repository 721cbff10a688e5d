/**
 * runs.cancelled_with in a store migrated from before it: the migration sets it once, by the text of each cancelled
 * child's newest cancelling event (what the retry of a parent read before the column), so the upgraded store's
 * retry of a parent brings back the children its cancel took, and only those.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { RunStore, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { migratePostgres } from '../../lib/store/postgres/migrate';
import { openSqliteStore } from '../../lib/store/sqlite';
import { migrateSqlite } from '../../lib/store/sqlite/migrate';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';
import { tempDir } from '../support/tmp';

const pgHere = await postgresAvailable('cancelled_with migration');

/** The migrations a store had before `tag`, the one under test. */
const migrationsBefore = (dialect: 'sqlite' | 'pg', tag: string) => {
  const all = migrationsOf(dialect);
  return all.slice(
    0,
    all.findIndex((m) => m.tag === tag),
  );
};

/** Each run: its parent, its status, and its operator events' lines, oldest first. */
const RUNS: [id: string, parent: string | null, status: string, events: string[]][] = [
  ['p', null, 'cancelled', ['cancel by ann: waiting → cancelled']],
  // Its parent's cascade.
  ['p:a', 'p', 'cancelled', ['cancel by ann (with its parent p): waiting → cancelled']],
  // Cancelled on its own.
  ['p:b', 'p', 'cancelled', ['cancel by ann: waiting → cancelled']],
  // Started after its parent's cancel.
  ['p:c', 'p', 'cancelled', ['cancelled as it was started: its parent p had been cancelled']],
  // Taken by a cascade once, retried, then cancelled on its own: the newest cancel decides.
  [
    'p:d',
    'p',
    'cancelled',
    [
      'cancel by ann (with its parent p): queued → cancelled',
      'retry by bob: cancelled → queued',
      'cancel by bob: queued → cancelled',
    ],
  ],
  // Cancelled on its own, then taken by a cascade when it had been retried.
  [
    'p:e',
    'p',
    'cancelled',
    [
      'cancel by bob: running → cancelled',
      'retry by bob: cancelled → queued',
      'cancel by ann (with its parent p): paused → cancelled',
    ],
  ],
  // Its cascade came before a retry that left it queued.
  [
    'p:f',
    'p',
    'queued',
    ['cancel by ann (with its parent p): waiting → cancelled', 'retry by bob: cancelled → queued'],
  ],
  // Another parent's line: not this child's parent.
  ['q:a', 'q', 'cancelled', ['cancel by ann (with its parent p): waiting → cancelled']],
];

const EXPECTED = [
  { id: 'p', cancelled_with: null },
  { id: 'p:a', cancelled_with: 'p' },
  { id: 'p:b', cancelled_with: null },
  { id: 'p:c', cancelled_with: 'p' },
  { id: 'p:d', cancelled_with: null },
  { id: 'p:e', cancelled_with: 'p' },
  { id: 'p:f', cancelled_with: null },
  { id: 'q:a', cancelled_with: null },
];

/** The parent's retry brings back the children the column names, in their order, and leaves the rest. */
async function expectRetried(store: Store & RunStore) {
  const retried = await store.actOnRun('p', 'retry', 'ann');
  expect(retried.retriedChildren).toEqual(['p:a', 'p:c', 'p:e'].map((runId) => ({ runId, parentId: 'p' })));
  const statuses = await Promise.all(
    ['p:a', 'p:b', 'p:c', 'p:d', 'p:e'].map(async (id) => (await store.getRun(id))?.status),
  );
  expect(statuses).toEqual(['queued', 'cancelled', 'queued', 'cancelled', 'queued']);
  expect((await store.getRun('p:a'))?.cancelledWith).toBeNull();
}

describe('cancelled_with in a store migrated from before it', () => {
  it('SQLite: is set for the children their parent’s cancel took', async () => {
    const path = tempDir('waybill-cancelled-with-').file('store.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    migrateSqlite(db, migrationsBefore('sqlite', '0033_cancelled_with'), 1);
    const run = db.prepare(
      `INSERT INTO runs (id, workflow, input_json, status, created_at, updated_at, parent_run_id) VALUES (?, 'w', '{}', ?, ?, ?, ?)`,
    );
    const event = db.prepare(
      `INSERT INTO step_events (run_id, outcome, count, detail, at) VALUES (?, 'operator', 1, ?, 1)`,
    );
    for (const [i, [id, parent, status, events]] of RUNS.entries()) {
      run.run(id, status, i, i, parent);
      for (const detail of events) event.run(id, detail);
    }
    db.close();
    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      expect(store.db.prepare('SELECT id, cancelled_with FROM runs ORDER BY id').all()).toEqual(EXPECTED);
      await expectRetried(store);
    } finally {
      await store.close();
    }
  });

  it.runIf(pgHere)('PostgreSQL: is set for the children their parent’s cancel took', async () => {
    const schema = await testSchema('wb_cancelled_with');
    const t = schema.t;
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    try {
      await migratePostgres(client, migrationsBefore('pg', '0040_cancelled_with'), schema.name);
    } finally {
      await client.end();
    }
    for (const [i, [id, parent, status, events]] of RUNS.entries()) {
      await schema.admin.query(
        `INSERT INTO ${t('runs')} (id, workflow, input_json, status, created_at, updated_at, parent_run_id)
        VALUES ($1, 'w', '{}', $2, $3, $3, $4)`,
        [id, status, i, parent],
      );
      for (const detail of events) {
        await schema.admin.query(
          `INSERT INTO ${t('step_events')} (run_id, outcome, count, detail, at) VALUES ($1, 'operator', 1, $2, 1)`,
          [id, detail],
        );
      }
    }
    const store = (await openStore(schema.url)) as Store & RunStore;
    try {
      expect(await schema.admin.query(`SELECT id, cancelled_with FROM ${t('runs')} ORDER BY id COLLATE "C"`)).toEqual(
        EXPECTED,
      );
      await expectRetried(store);
    } finally {
      await store.close();
    }
  });
});
