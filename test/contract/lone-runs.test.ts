/**
 * lone_runs: the runs with committed rows and neither a runs row nor a progress row, each at its latest commit,
 * which the runs list reads its `idle` outside runs from. It used to find them among every commit since its page's
 * floor (every commit of a run that had gone on alone since the page's other runs), or among every run of the
 * store when the page was short (a search that matched nothing). The table must be exact for every writer: our
 * commits alone and batched, an outside client's rows, a progress or runs row made or deleted later, rows deleted
 * or moved, and a store migrated from before it.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { RunStore, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { migratePostgres } from '../../lib/store/postgres/migrate';
import { openSqliteStore } from '../../lib/store/sqlite';
import { migrateSqlite } from '../../lib/store/sqlite/migrate';
import { backends, type StoreHandle } from '../support/backends';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';
import { tempDir } from '../support/tmp';

const list = await backends();
const pgHere = await postgresAvailable('lone runs migration');
const TTL = 60_000;

/** Each lone run, and whether its `at` is its latest committed row's time (1) or not (0). */
const LONE = `SELECT l.run_id AS run, CASE WHEN l.at = (SELECT max(c.committed_at) FROM committed c WHERE c.run_id = l.run_id)
  THEN 1 ELSE 0 END AS latest FROM lone_runs l ORDER BY l.run_id`;

describe.each(list)('lone runs on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore;
  });
  afterEach(() => h.close());

  const lone = () => h.rows<{ run: string; latest: number }>(LONE);
  const outsideCommit = async (key: string, run: string) =>
    h.exec(
      `INSERT INTO committed (idem_key, run_id, result_json, committed_at) VALUES ('${key}', '${run}', '1', ${await h.now()})`,
    );
  const listed = async (filter: Partial<Parameters<RunStore['listRuns']>[0]> = {}) =>
    (await store.listRuns({ claimTtlMs: TTL, limit: 50, ...filter })).map((r) => [r.id, r.status]);

  it('records our commits alone and batched, and an outside client’s, each run at its latest commit', async () => {
    await new Checkpoint(store, 'solo', { clock: h.clock }).runOnce('solo:1', () => 1);
    // Two runs of one process in one event-loop turn: one group commit.
    await Promise.all(
      ['pair-a', 'pair-b'].map((run) => new Checkpoint(store, run, { clock: h.clock }).runOnce(`${run}:1`, () => 1)),
    );
    await outsideCommit('outside:1', 'outside');
    await h.elapse(1_000);
    await new Checkpoint(store, 'solo', { clock: h.clock }).runOnce('solo:2', () => 2);
    expect(await lone()).toEqual(['outside', 'pair-a', 'pair-b', 'solo'].map((run) => ({ run, latest: 1 })));
    // Newest first; the batch's two share their time, and then go by id.
    expect(await listed()).toEqual(['solo', 'outside', 'pair-a', 'pair-b'].map((id) => [id, 'idle']));
    // A run of ours with a runs row, and one that saves progress, are not lone.
    await store.createRun({ id: 'declared', workflow: 'w', inputJson: '{}', totalSteps: 1 });
    await new Checkpoint(store, 'declared', { clock: h.clock }).runOnce('declared:1', () => 1);
    const saving = new Checkpoint(store, 'saving', { clock: h.clock });
    await saving.runOnce('saving:1', () => 1);
    await saving.saveProgress(1, {});
    expect((await lone()).map((r) => r.run)).toEqual(['outside', 'pair-a', 'pair-b', 'solo']);
  });

  it('takes a run out when it gets a progress or runs row or loses its last row, and back when that row goes', async () => {
    await outsideCommit('art:1', 'art');
    expect((await lone()).map((r) => r.run)).toEqual(['art']);
    // The article's client saves its progress after its commit.
    await h.exec(
      `INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('art', 1, '{}', ${await h.now()})`,
    );
    expect(await lone()).toEqual([]);
    expect(await listed()).toEqual([['art', 'idle']]);
    await h.exec(`DELETE FROM progress WHERE run_id = 'art'`);
    expect(await lone()).toEqual([{ run: 'art', latest: 1 }]);
    await h.exec(
      `INSERT INTO runs (id, workflow, input_json, status, created_at, updated_at) VALUES ('art', 'w', '{}', 'completed', 1, 1)`,
    );
    expect(await lone()).toEqual([]);
    await h.exec(`DELETE FROM runs WHERE id = 'art'`);
    expect(await lone()).toEqual([{ run: 'art', latest: 1 }]);
    // Rows moved to another run: the old one has none left, the new one is lone.
    await h.exec(`UPDATE committed SET run_id = 'moved' WHERE run_id = 'art'`);
    expect(await lone()).toEqual([{ run: 'moved', latest: 1 }]);
    expect(await listed()).toEqual([['moved', 'idle']]);
    await outsideCommit('moved:2', 'moved');
    await h.exec(`DELETE FROM committed WHERE idem_key = 'moved:2'`);
    expect((await lone()).map((r) => r.run)).toEqual(['moved']);
    await h.exec(`DELETE FROM committed WHERE run_id = 'moved'`);
    expect(await lone()).toEqual([]);
    expect(await listed()).toEqual([]);
  });

  it('lists a lone run among the others by its latest commit, past a full page and in a search', async () => {
    for (let i = 0; i < 3; i++) {
      await store.createRun({ id: `run-${i}`, workflow: 'w', inputJson: '{}', totalSteps: 1 });
      await h.elapse(1_000);
    }
    await new Checkpoint(store, 'lib-loop', { clock: h.clock }).runOnce('lib-loop:1', () => 1);
    await h.elapse(1_000);
    await store.createRun({ id: 'run-3', workflow: 'w', inputJson: '{}', totalSteps: 1 });
    expect((await listed({ limit: 2 })).map(([id]) => id)).toEqual(['run-3', 'lib-loop']);
    const [, second] = await store.listRuns({ claimTtlMs: TTL, limit: 2 });
    expect((await store.listRuns({ claimTtlMs: TTL, limit: 2, after: second })).map((r) => r.id)).toEqual([
      'run-2',
      'run-1',
    ]);
    expect(await listed({ search: 'loop' })).toEqual([['lib-loop', 'idle']]);
    expect(await listed({ search: 'nothing-matches' })).toEqual([]);
    expect(await listed({ status: 'idle' })).toEqual([['lib-loop', 'idle']]);
  });
});

describe('lone runs in a store migrated from before them', () => {
  const ROWS: [key: string, run: string][] = [
    ['a:0', 'a'],
    ['art:0', 'art'],
    ['lone:0', 'lone'],
    ['lone:1', 'lone'],
  ];
  const migrationsBefore = (dialect: 'sqlite' | 'pg', tag: string) => {
    const all = migrationsOf(dialect);
    return all.slice(
      0,
      all.findIndex((m) => m.tag === tag),
    );
  };

  /** `a` has a runs row, `art` a progress row, `lone` neither: only `lone` is lone, at its later row. */
  async function expectFound(store: Store & RunStore) {
    expect((await store.listRuns({ claimTtlMs: TTL, status: 'idle' })).map((r) => [r.id, r.updatedAt])).toEqual([
      ['art', 5],
      ['lone', 3],
    ]);
  }

  it('SQLite: finds them on migrating', async () => {
    const path = tempDir('waybill-lone-').file('store.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    migrateSqlite(db, migrationsBefore('sqlite', '0031_lone_runs'), 1);
    db.prepare(
      `INSERT INTO runs (id, workflow, input_json, status, created_at, updated_at) VALUES ('a', 'w', '{}', 'completed', 1, 1)`,
    ).run();
    const commit = db.prepare(
      'INSERT INTO committed (idem_key, run_id, result_json, committed_at) VALUES (?, ?, ?, ?)',
    );
    for (const [i, [key, run]] of ROWS.entries()) commit.run(key, run, '1', i);
    db.prepare(`INSERT INTO progress (run_id, step, state_json, updated_at) VALUES ('art', 1, '{}', 5)`).run();
    db.close();
    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      expect(store.db.prepare('SELECT run_id, at FROM lone_runs').all()).toEqual([{ run_id: 'lone', at: 3 }]);
      await expectFound(store);
    } finally {
      await store.close();
    }
  });

  it.runIf(pgHere)('PostgreSQL: finds them on migrating', async () => {
    const schema = await testSchema('wb_lone');
    const t = schema.t;
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    try {
      await migratePostgres(client, migrationsBefore('pg', '0038_lone_runs'), schema.name);
    } finally {
      await client.end();
    }
    // That store's functions kept no lone_runs: theirs are the texts the migrations before it brought.
    await schema.admin.query(`SET search_path = ${schema.name}`);
    for (const name of ['waybill_committed_changed', 'waybill_progress_counted']) {
      const text = migrationsBefore('pg', '0038_lone_runs')
        .flatMap((m) => m.statements)
        .findLast((statement) => statement.includes(`CREATE OR REPLACE FUNCTION ${name}()`));
      await schema.admin.query(text!);
    }
    await schema.admin.query('RESET search_path');
    await schema.admin.query(`UPDATE ${t('waybill_functions')} SET version = version - 1, hash = 'previous'`);
    await schema.admin.query(
      `INSERT INTO ${t('runs')} (id, workflow, input_json, status, created_at, updated_at) VALUES ('a', 'w', '{}', 'completed', 1, 1)`,
    );
    for (const [i, [key, run]] of ROWS.entries()) {
      await schema.admin.query(
        `INSERT INTO ${t('committed')} (idem_key, run_id, result_json, committed_at) VALUES ($1, $2, '1', $3)`,
        [key, run, i],
      );
    }
    await schema.admin.query(
      `INSERT INTO ${t('progress')} (run_id, step, state_json, updated_at) VALUES ('art', 1, '{}', 5)`,
    );
    const store = (await openStore(schema.url)) as Store & RunStore;
    try {
      expect(await schema.admin.query(`SELECT run_id, at FROM ${t('lone_runs')}`)).toEqual([{ run_id: 'lone', at: 3 }]);
      await expectFound(store);
    } finally {
      await store.close();
    }
  });
});
