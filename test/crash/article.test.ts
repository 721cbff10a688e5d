/**
 * The article's own client and schema against Waybill: a store its three CREATE TABLE statements created is
 * upgraded in place with every row kept, its SQL keeps working on the upgraded file, and its Python class
 * (run as a real python3 process) reads and writes a Waybill store alongside Waybill's own workers.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { stepKey } from '../../lib/checkpoint/keys';
import { ManualClock } from '../../lib/clock';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { openSqliteStore } from '../../lib/store/sqlite';
import { ARTICLE_PYTHON, ARTICLE_PYTHON_DRIVER, ARTICLE_SCHEMA, ARTICLE_SQL } from '../fixtures/sqlite-article';
import { finish, spawnCommand } from '../support/child';
import { type TempDir, tempDir } from '../support/tmp';

const T0 = 1_767_225_600; // 2026-01-01T00:00:00Z, epoch seconds as the article writes them

function tables(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db
      .prepare<[], { name: string }>(
        `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`,
      )
      .all()
      .map((r) => r.name);
  } finally {
    db.close();
  }
}

/** A file exactly as the article's class leaves it, with a run that got to step 3 and an orphaned claim. */
function createArticleStore(path: string): void {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.exec(ARTICLE_SCHEMA);
    const insertCommitted = db.prepare(ARTICLE_SQL.insertCommitted);
    for (let step = 0; step < 3; step++) {
      insertCommitted.run(stepKey('legacy', step), 'legacy', JSON.stringify({ answer: step * 10 }), T0 + step);
    }
    db.prepare(ARTICLE_SQL.saveProgress).run('legacy', 3, JSON.stringify({ processed: 3 }), T0 + 3);
    db.prepare(ARTICLE_SQL.saveProgress).run('other', 1, JSON.stringify({ processed: 1 }), T0 + 1);
    // The article's worker died mid-execute of step 3: its claim row stays behind.
    db.prepare(ARTICLE_SQL.insertClaim).run(stepKey('legacy', 3), 'legacy', T0 + 3.5);
  } finally {
    db.close();
  }
}

describe("article compatibility: the article's schema and SQL", () => {
  it("a store created by the article's CREATE TABLE statements is upgraded on open, every row kept", async () => {
    const dir = tempDir('waybill-article-');
    const path = dir.file('article.db');
    createArticleStore(path);
    expect(tables(path)).toEqual(['claims', 'committed', 'progress']);

    // Two minutes after the article's worker died: its claim (no lease column) is past a 30 s claim TTL.
    const clock = new ManualClock((T0 + 120) * 1000);
    const store = openSqliteStore({ path, clock, synchronous: 'normal' });
    try {
      expect(tables(path)).toEqual([
        'audit',
        'claims',
        'committed',
        'committed_history',
        'earlier_starts',
        'events',
        'lone_runs',
        'metrics_tally',
        'model_call_chunks',
        'model_calls',
        'progress',
        'run_logs',
        'run_metadata',
        'run_tags',
        'runs',
        'schedules',
        'step_events',
        'step_streams',
        'waits',
        'waybill_migrations',
        'webhook_deliveries',
        'webhooks',
        'workers',
        'workflows',
      ]);
      expect(await store.loadProgress('legacy')).toEqual({
        runId: 'legacy',
        step: 3,
        stateJson: '{"processed":3}',
        updatedAt: T0 + 3,
        executed: 0,
        skipped: 0,
        awaited: 0,
        saveMs: null,
        // The article's three rows, counted as its rows were copied in (migration 0027's triggers).
        committedCount: 3,
      });
      expect(await store.loadProgress('other')).toMatchObject({ step: 1, stateJson: '{"processed":1}' });
      expect(await store.listCommitted('legacy')).toEqual(
        [0, 1, 2].map((step) => ({
          idemKey: stepKey('legacy', step),
          runId: 'legacy',
          resultJson: JSON.stringify({ answer: step * 10 }),
          committedAt: T0 + step,
          step: null,
          fingerprint: null,
          workerId: null,
          durationMs: null,
          source: 'executed',
          forkedFrom: null,
          inputJson: null,
          // The article's rows carry no prior progress: a rerun from them keeps the state as it is.
          priorStep: null,
          priorStateJson: null,
        })),
      );
      expect(await store.listClaims({ claimTtlMs: 30_000 })).toEqual([
        {
          idemKey: stepKey('legacy', 3),
          runId: 'legacy',
          claimedAt: T0 + 3.5,
          token: null,
          workerId: null,
          leaseExpiresAt: null,
          heartbeatAt: null,
          step: null,
          attempt: 1,
          orphaned: true,
        },
      ]);

      // Waybill continues the article's run: step 3's orphaned claim is taken over (attempt 2), step 4 is new.
      const attempts: number[] = [];
      const checkpoint = new Checkpoint(store, 'legacy', { workerId: 'waybill', claimTtlMs: 30_000 });
      const report = await runAgent([0, 1, 2, 3, 4], checkpoint, (item, ctx) => {
        attempts.push(ctx.attempt);
        return { answer: item * 10 };
      });
      expect(report).toEqual({ processed: 5, executed: 2, skipped: 0, awaited: 0 });
      expect(attempts).toEqual([2, 1]);
      expect((await store.listEvents('legacy')).map((e) => [e.idemKey, e.outcome])).toEqual([
        [stepKey('legacy', 3), 'expired'],
      ]);
      expect(await store.listCommitted('legacy')).toHaveLength(5);
      expect(await store.listClaims({ claimTtlMs: 30_000 })).toEqual([]);
    } finally {
      await store.close();
    }

    // Opening again migrates nothing and keeps everything.
    const again = openSqliteStore({ path, clock, synchronous: 'normal' });
    try {
      expect(await again.listCommitted('legacy')).toHaveLength(5);
      expect(await again.loadProgress('legacy')).toMatchObject({
        step: 5,
        stateJson: '{"processed":5}',
        executed: 2,
        committedCount: 5,
      });
      const migrations = migrationsOf('sqlite').length;
      expect(again.db.prepare('SELECT count(*) AS n FROM waybill_migrations').get()).toEqual({ n: migrations });
    } finally {
      await again.close();
    }

    // The article's statements, verbatim, on the upgraded file.
    const db = new Database(path);
    try {
      const key = stepKey('legacy', 9);
      db.prepare(ARTICLE_SQL.insertClaim).run(key, 'legacy', T0 + 200);
      // Its claim relies on the primary key: a second INSERT is the IntegrityError it turns into "awaited".
      expect(() => db.prepare(ARTICLE_SQL.insertClaim).run(key, 'legacy', T0 + 201)).toThrow(
        expect.objectContaining({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' }),
      );
      db.exec('BEGIN IMMEDIATE;');
      db.prepare(ARTICLE_SQL.insertCommitted).run(key, 'legacy', JSON.stringify({ answer: 90 }), T0 + 202);
      db.prepare(ARTICLE_SQL.deleteClaim).run(key);
      db.exec('COMMIT;');
      expect(db.prepare(ARTICLE_SQL.findCommitted).get(key)).toEqual({ result_json: '{"answer":90}' });
      expect(db.prepare(ARTICLE_SQL.findCommitted).get(stepKey('legacy', 0))).toEqual({ result_json: '{"answer":0}' });
      db.prepare(ARTICLE_SQL.saveProgress).run('legacy', 10, JSON.stringify({ processed: 6 }), T0 + 203);
      db.prepare(ARTICLE_SQL.saveProgress).run('fresh', 1, JSON.stringify({ processed: 1 }), T0 + 204);
      expect(db.prepare(ARTICLE_SQL.load).get('legacy')).toEqual({ step: 10, state_json: '{"processed":6}' });
    } finally {
      db.close();
    }

    const last = openSqliteStore({ path, clock, synchronous: 'normal' });
    try {
      // Waybill reads what the article wrote; the article's upsert leaves Waybill's counters alone.
      expect(await last.getCommitted(stepKey('legacy', 9))).toMatchObject({
        resultJson: '{"answer":90}',
        source: 'executed',
        fingerprint: null,
      });
      expect(await last.loadProgress('legacy')).toMatchObject({
        step: 10,
        stateJson: '{"processed":6}',
        executed: 2,
        skipped: 0,
      });
      expect(await last.loadProgress('fresh')).toMatchObject({ step: 1, executed: 0, skipped: 0, awaited: 0 });
      expect(await last.listClaims({ claimTtlMs: 30_000 })).toEqual([]);
    } finally {
      await last.close();
    }
  });
});

const python = spawnSync('python3', ['-c', 'import sqlite3'], { stdio: 'ignore' });
const hasPython = python.status === 0;
if (!hasPython) {
  if (process.env.CI === 'true')
    throw new Error('CI=true requires python3 with its sqlite3 module for the article-client tests');
  console.warn('\n!!! article Python client tests SKIPPED: python3 with the sqlite3 module is not available.\n');
}

interface PythonReport {
  processed?: number;
  executed?: number;
  skipped?: number;
  awaited?: number;
  status?: string;
  result?: unknown;
}

function writePython(dir: TempDir): string {
  writeFileSync(dir.file('article.py'), ARTICLE_PYTHON);
  writeFileSync(dir.file('driver.py'), ARTICLE_PYTHON_DRIVER);
  return dir.file('driver.py');
}

async function runPython(driver: string, args: (string | number)[]): Promise<PythonReport> {
  return finish<PythonReport>(spawnCommand('python3', [driver, ...args.map(String)]));
}

describe.skipIf(!hasPython)("article compatibility: the article's Python class, run by python3", () => {
  it('resumes a run Waybill started in a Waybill store, and each sees the other’s commits', async () => {
    const dir = tempDir('waybill-python-');
    const driver = writePython(dir);
    const path = dir.file('waybill.db');
    const effects = dir.file('python-effects.log');
    const N = 10;
    const K = 4;

    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      // Waybill runs the first 4 steps of run "mixed" and leaves the map at step 4.
      const waybillReport = await runAgent(
        [0, 1, 2, 3],
        new Checkpoint(store, 'mixed', { workerId: 'waybill' }),
        (item) => ({ step: item, by: 'waybill' }),
      );
      expect(waybillReport).toEqual({ processed: K, executed: K, skipped: 0, awaited: 0 });
    } finally {
      await store.close();
    }

    // The article's run_agent picks the run up from Waybill's map and does steps 4..9.
    expect(await runPython(driver, [path, 'mixed', N, effects])).toEqual({
      processed: N,
      executed: N - K,
      skipped: 0,
      awaited: 0,
    });
    expect(readFileSync(effects, 'utf8').trim().split('\n')).toEqual(
      Array.from({ length: N - K }, (_, i) => `${stepKey('mixed', K + i)} python`),
    );

    const after = openSqliteStore({ path, synchronous: 'normal' });
    try {
      const committed = await after.listCommitted('mixed');
      expect(committed).toHaveLength(N);
      for (let step = 0; step < N; step++) {
        const row = await after.getCommitted(stepKey('mixed', step));
        expect(JSON.parse(row!.resultJson)).toEqual({ step, by: step < K ? 'waybill' : 'python' });
        expect(row!.workerId).toBe(step < K ? 'waybill' : null);
        expect(row!.source).toBe('executed');
      }
      expect(await after.loadProgress('mixed')).toMatchObject({ step: N, stateJson: '{"processed": 10}', executed: K });
      expect(await after.listClaims({ claimTtlMs: 30_000 })).toEqual([]);

      // Waybill skips a key the article committed, returning the article's result, and runs nothing.
      let ran = 0;
      const fromPython = await new Checkpoint(after, 'mixed').runOnce(stepKey('mixed', 7), () => ++ran);
      expect(fromPython).toEqual({ result: { step: 7, by: 'python' }, status: 'skipped' });
      expect(ran).toBe(0);
    } finally {
      await after.close();
    }

    // And the article skips a key Waybill committed, returning Waybill's result.
    expect(await runPython(driver, [path, 'mixed', N, effects, stepKey('mixed', 2)])).toEqual({
      status: 'skipped',
      result: { step: 2, by: 'waybill' },
    });
    expect(readFileSync(effects, 'utf8').trim().split('\n')).toHaveLength(N - K);
  });

  it('a store the Python class created is adopted by Waybill, which finishes the run', async () => {
    const dir = tempDir('waybill-python-');
    const driver = writePython(dir);
    const path = dir.file('python.db');
    const effects = dir.file('python-effects.log');

    expect(await runPython(driver, [path, 'py', 4, effects])).toEqual({
      processed: 4,
      executed: 4,
      skipped: 0,
      awaited: 0,
    });
    expect(tables(path)).toEqual(['claims', 'committed', 'progress']);

    const store = openSqliteStore({ path, synchronous: 'normal' });
    try {
      expect(await store.listCommitted('py')).toHaveLength(4);
      const calls: number[] = [];
      const report = await runAgent([0, 1, 2, 3, 4, 5], new Checkpoint(store, 'py'), (item) => {
        calls.push(item);
        return { step: item, by: 'waybill' };
      });
      expect(report).toEqual({ processed: 6, executed: 2, skipped: 0, awaited: 0 });
      expect(calls).toEqual([4, 5]);
      expect(await store.listCommitted('py')).toHaveLength(6);
      expect(await store.loadProgress('py')).toMatchObject({ step: 6, stateJson: '{"processed":6}', executed: 2 });
    } finally {
      await store.close();
    }
  });
});
