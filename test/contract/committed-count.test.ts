/**
 * progress.committed_count (migrations 0027 SQLite, 0034 and 0036 PostgreSQL): a run's committed rows, kept by the store
 * wherever rows are added or removed, so the runs list reads it instead of counting a 100,000-step run on every
 * request. It must equal the rows themselves after every writer: a commit alone and in a group commit, with and
 * without a progress write, a claim resolved by hand, a rerun and a fork, retention, and rows written directly
 * by another client: the reference article's own statements (which know nothing of the count), an operator's
 * DELETE or UPDATE. The list, countCommitted and the progress row all say the number of rows listCommitted returns.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { RetentionStore, RewindStore, RunStore, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { migratePostgres } from '../../lib/store/postgres/migrate';
import { pruneAll } from '../../lib/store/shared/prune';
import { openSqliteStore } from '../../lib/store/sqlite';
import { migrateSqlite } from '../../lib/store/sqlite/migrate';
import { ARTICLE_SQL } from '../fixtures/sqlite-article';
import { backends, type StoreHandle } from '../support/backends';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';
import { tempDir } from '../support/tmp';

const list = await backends();
type FullStore = Store & RunStore & RewindStore & RetentionStore;
const TTL = 60_000;
const pgHere = await postgresAvailable('committed_count migration');

/** One of the article's statements with its values written in, as h.exec takes SQL text (both dialects read it). */
const article = (text: string, values: (string | number)[]) => {
  let n = 0;
  const quoted = values.map((v) => (typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v)));
  return text.replace(/\?/g, () => quoted[n++]!);
};

describe.each(list)('committed_count on $name', (backend) => {
  let h: StoreHandle;
  let store: FullStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as FullStore;
  });
  afterEach(() => h.close());

  /** Every reader's count of the run's rows, and the rows themselves. */
  async function counts(runId: string) {
    const listed = (await store.listRuns({ claimTtlMs: TTL, search: runId, limit: 100 })).find((r) => r.id === runId);
    return {
      rows: (await store.listCommitted(runId, { limit: 1000 })).length,
      kept: (await store.loadProgress(runId))?.committedCount,
      counted: await store.countCommitted(runId),
      listed: listed?.committed,
    };
  }
  /** The run's rows are `n`, and every reader says so; `kept`: whether the run has a progress row. */
  async function expectCount(runId: string, n: number, kept = true) {
    expect(await counts(runId)).toEqual({ rows: n, kept: kept ? n : undefined, counted: n, listed: n });
  }

  const agent = (runId: string, steps: number, workerId?: string) =>
    runAgent(
      Array.from({ length: steps }, (_, i) => i),
      new Checkpoint(store, runId, { workerId, clock: h.clock }),
      (x) => x,
    );
  const articleInsert = (key: string, runId: string) =>
    h.exec(article(ARTICLE_SQL.insertCommitted, [key, runId, '{"by":"article"}', 1]));
  const articleProgress = (runId: string, step: number) =>
    h.exec(article(ARTICLE_SQL.saveProgress, [runId, step, '{"processed":1}', 2]));

  it('counts commits alone, in a group commit, and without a progress write', async () => {
    await store.createRun({ id: 'solo', workflow: 'w', inputJson: '{}', totalSteps: 5 });
    await agent('solo', 5);
    await expectCount('solo', 5);

    // Four runs at once: their commits share transactions (group commit), each counted on its own row.
    const runs = ['b0', 'b1', 'b2', 'b3'];
    for (const id of runs) await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: 6 });
    await Promise.all(runs.map((id) => agent(id, 6)));
    for (const id of runs) await expectCount(id, 6);

    // A step committed without progress (a workflow's ctx.step), and a key already committed (skipped).
    const cp = new Checkpoint(store, 'solo', { clock: h.clock });
    await cp.runOnce('solo:extra', () => 'x');
    await cp.runOnce('solo:extra', () => 'y');
    await expectCount('solo', 6);

    // An outside client's claim resolved by hand: a `manual` row, counted like the rest, not as executed.
    await h.insertOutsideClaim('solo:by-hand', 'solo');
    await store.resolveClaim({
      idemKey: 'solo:by-hand',
      resultJson: '"ok"',
      actor: 'test',
      claimTtlMs: 0,
      force: true,
    });
    await expectCount('solo', 7);
    const row = (await store.listRuns({ claimTtlMs: TTL, search: 'solo' })).find((r) => r.id === 'solo');
    expect(row).toMatchObject({ committed: 7, executed: 6 });

    // A workflow's run that never saved progress: no row to keep it on, so it is counted.
    const bare = new Checkpoint(store, 'bare', { clock: h.clock });
    for (let i = 0; i < 3; i++) await bare.runOnce(`bare:${i}`, () => i, { step: i });
    await expectCount('bare', 3, false);
    // Its first progress write counts the rows it finds.
    await bare.saveProgress(3, { done: true });
    await expectCount('bare', 3);
  });

  it('counts a group commit whose neighbour is refused: the refused commit adds nothing', async () => {
    await store.createRun({ id: 'g', workflow: 'w', inputJson: '{}', totalSteps: 4 });
    await agent('g', 2);
    const claimed = async (step: number) => {
      const r = {
        idemKey: `g:step:${step}`,
        runId: 'g',
        token: `token-${step}`,
        workerId: null,
        step,
        attempt: 1,
        leaseMs: TTL,
        claimTtlMs: TTL,
      };
      expect((await store.claim(r)).kind).toBe('claimed');
      return r;
    };
    const [a, b] = [await claimed(2), await claimed(3)];
    const commit = (r: typeof a, token: string, progress: boolean) =>
      store.commit({
        idemKey: r.idemKey,
        token,
        runId: 'g',
        resultJson: '1',
        step: r.step,
        fingerprint: null,
        workerId: null,
        durationMs: 1,
        ...(progress
          ? { progress: { runId: 'g', step: r.step + 1, stateJson: '{}', executed: 1, skipped: 0, awaited: 0 } }
          : {}),
      });
    // Sent in one turn, so one batch: the second's token is not its claim's, and only it is refused.
    const [kept, refused] = await Promise.allSettled([commit(a, a.token, true), commit(b, 'not-its-token', true)]);
    expect([kept.status, refused.status]).toEqual(['fulfilled', 'rejected']);
    await expectCount('g', 3);
    // The refused step committed again with its own token, without a progress write this time.
    await commit(b, b.token, false);
    await expectCount('g', 4);
  });

  it('stays exact when another client writes the rows directly', async () => {
    // The article's own client: committed rows with its four columns, then its progress upsert.
    await articleInsert('art:step:0', 'art');
    await articleInsert('art:step:1', 'art');
    await expectCount('art', 2, false);
    await articleProgress('art', 2);
    await expectCount('art', 2);
    await articleInsert('art:step:2', 'art');
    await articleProgress('art', 3);
    await expectCount('art', 3);

    // Into a run Waybill keeps the count of.
    await store.createRun({ id: 'mixed', workflow: 'w', inputJson: '{}', totalSteps: 3 });
    await agent('mixed', 3);
    await articleInsert('mixed:article', 'mixed');
    await expectCount('mixed', 4);

    // An operator's hand: several rows deleted in one statement, a row moved to another run, an update in place.
    await h.exec(`DELETE FROM committed WHERE idem_key IN ('mixed:article', 'mixed:step:0', 'art:step:0')`);
    await expectCount('mixed', 2);
    await expectCount('art', 2);
    await h.exec(`UPDATE committed SET run_id = 'art' WHERE idem_key = 'mixed:step:1'`);
    await expectCount('mixed', 1);
    await expectCount('art', 3);
    await h.exec(`UPDATE committed SET result_json = '"edited"' WHERE run_id = 'art'`);
    await expectCount('art', 3);
    // A progress row deleted and made again counts the rows once more.
    await h.exec(`DELETE FROM progress WHERE run_id = 'art'`);
    await expectCount('art', 3, false);
    await articleProgress('art', 1);
    await expectCount('art', 3);
  });

  it('follows a rerun, a fork and retention', async () => {
    await store.createRun({ id: 'r', workflow: 'w', inputJson: '{}', totalSteps: 6 });
    await agent('r', 6);
    await store.actOnRun('r', 'pause', 'test');
    await store.rerunRun({
      runId: 'r',
      fromStep: 4,
      inputJson: null,
      actor: 'alice (operator)',
      reason: null,
      claimTtlMs: TTL,
    });
    await expectCount('r', 4);
    await store.forkRun({ runId: 'r', fromStep: 3, newId: 'r-fork', inputJson: null, actor: 'alice', claimTtlMs: TTL });
    await expectCount('r-fork', 3);
    await expectCount('r', 4);

    // Retention deletes a run's rows in batches before its progress row: each batch is subtracted.
    await store.createRun({ id: 'old', workflow: 'w', inputJson: '{}', totalSteps: 5 });
    await agent('old', 5);
    await store.actOnRun('old', 'cancel', 'test');
    await h.elapse(2_000);
    const before = (await h.now()) - 1;
    await store.createRun({ id: 'young', workflow: 'w', inputJson: '{}', totalSteps: 2 });
    await agent('young', 2);
    const removed = await pruneAll(store, { before, batchSize: 2 });
    expect(removed.runs).toBeGreaterThan(0);
    expect(await counts('old')).toEqual({ rows: 0, kept: undefined, counted: 0, listed: undefined });
    await expectCount('young', 2);
  });
});

describe('committed_count from a store at an earlier migration', () => {
  /** Two runs with progress (one of them the article's, one Waybill's), one with committed rows only. */
  const ROWS: [key: string, run: string][] = [
    ['a:0', 'a'],
    ['a:1', 'a'],
    ['a:2', 'a'],
    ['art:0', 'art'],
    ['lone:0', 'lone'],
    ['lone:1', 'lone'],
  ];
  const PROGRESS: [run: string, step: number][] = [
    ['a', 3],
    ['art', 1],
    ['empty', 0],
  ];
  const expected = { a: 3, art: 1, empty: 0 };

  /** The migrations a store had before `tag`, the one under test. */
  const migrationsBefore = (dialect: 'sqlite' | 'pg', tag: string) => {
    const all = migrationsOf(dialect);
    return all.slice(
      0,
      all.findIndex((m) => m.tag === tag),
    );
  };

  /**
   * The store, migrated on from ROWS and PROGRESS: counts the rows it found, then a Waybill run's commits and a
   * row the article's client writes (`insertArticle`), which no commit counts.
   */
  async function expectCounting(store: FullStore, insertArticle: (key: string, runId: string) => Promise<unknown>) {
    for (const [run, n] of Object.entries(expected)) {
      expect((await store.loadProgress(run))?.committedCount).toBe(n);
    }
    expect(await store.countCommitted('lone')).toBe(2);
    await store.createRun({ id: 'a', workflow: 'w', inputJson: '{}', totalSteps: 5 });
    await runAgent([0, 1, 2, 3, 4], new Checkpoint(store, 'a'), (x) => x);
    expect((await store.loadProgress('a'))?.committedCount).toBe(5);
    expect(await store.countCommitted('a')).toBe(5);
    await insertArticle('art:1', 'art');
    expect(await store.countCommitted('art')).toBe(2);
  }

  it('SQLite: counts the rows it finds, and keeps counting', async () => {
    const path = tempDir('waybill-count-').file('store.db');
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    const previous = migrationsBefore('sqlite', '0027_committed_count');
    expect(previous.at(-1)!.tag).toBe('0026_committed_one_run_index');
    migrateSqlite(db, previous, 1);
    for (const [key, run] of ROWS) db.prepare(ARTICLE_SQL.insertCommitted).run(key, run, '1', 1);
    for (const [run, step] of PROGRESS) db.prepare(ARTICLE_SQL.saveProgress).run(run, step, '{}', 1);
    db.close();

    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      await expectCounting(store, async (key, runId) =>
        store.db.prepare(ARTICLE_SQL.insertCommitted).run(key, runId, '1', 1),
      );
    } finally {
      await store.close();
    }
  });

  // Before 0034 there was no count; before 0036 three trigger functions kept it, where one does now.
  it.runIf(pgHere).each([
    ['0034_committed_count', 2],
    ['0036_committed_changed', 3],
  ])('PostgreSQL: from the store before %s (functions v%i), counts and keeps counting', async (tag, version) => {
    const schema = await testSchema('wb_count');
    const t = schema.t;
    // The store as that Waybill left it: its migrations, its functions' version (their text is ours, but for the
    // function that came with the migration under test, which it never had).
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await client.connect();
    try {
      await migratePostgres(client, migrationsBefore('pg', tag), schema.name);
    } finally {
      await client.end();
    }
    await schema.admin.query(`DROP FUNCTION ${t('waybill_committed_changed')}()`);
    // Ours keeps lone_runs (0038), which that store has not: the text it had, from the migration that brought it.
    const counted = migrationsBefore('pg', tag)
      .flatMap((m) => m.statements)
      .findLast((s) => s.includes('CREATE OR REPLACE FUNCTION waybill_progress_counted()'));
    if (counted) {
      await schema.admin.query(`SET search_path = ${schema.name}`);
      await schema.admin.query(counted);
      await schema.admin.query('RESET search_path');
    }
    await schema.admin.query(`UPDATE ${t('waybill_functions')} SET version = $1, hash = 'previous'`, [version]);
    for (const [key, run] of ROWS) {
      await schema.admin.query(
        `INSERT INTO ${t('committed')} (idem_key, run_id, result_json, committed_at) VALUES ($1, $2, '1', 1)`,
        [key, run],
      );
    }
    for (const [run, step] of PROGRESS) {
      await schema.admin.query(
        `INSERT INTO ${t('progress')} (run_id, step, state_json, updated_at) VALUES ($1, $2, '{}', 1)`,
        [run, step],
      );
    }

    const store = (await openStore(schema.url)) as FullStore;
    try {
      await expectCounting(store, (key, runId) =>
        schema.admin.query(
          `INSERT INTO ${t('committed')} (idem_key, run_id, result_json, committed_at) VALUES ($1, $2, '1', 1)`,
          [key, runId],
        ),
      );
      // Every trigger on committed runs the one function, and no older one is left.
      const triggers = await schema.admin.query<{ name: string; fn: string }>(
        `SELECT tgname::text AS name, tgfoid::regproc::text AS fn FROM pg_trigger
         WHERE tgrelid = $1::regclass AND NOT tgisinternal ORDER BY tgname`,
        [t('committed')],
      );
      expect(triggers.map((r) => [r.name, r.fn.replace(/^.*\./, '')])).toEqual(
        ['committed_count_delete', 'committed_count_insert', 'committed_count_move'].map((n) => [
          n,
          'waybill_committed_changed',
        ]),
      );
      const functions = await schema.admin.query<{ name: string }>(
        `SELECT proname::text AS name FROM pg_proc WHERE pronamespace = $1::regnamespace AND proname LIKE 'waybill_committed%'`,
        [`"${schema.name}"`],
      );
      expect(functions).toEqual([{ name: 'waybill_committed_changed' }]);
    } finally {
      await store.close();
    }
  });
});
