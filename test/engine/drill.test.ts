/**
 * `waybill drill` keeps to itself. By default it runs on a throwaway store beside the configured one (a temp
 * SQLite file, a temp schema on the same PostgreSQL) and leaves the user's store exactly as it was; with
 * --in-place it shares the user's store with a user's live worker, and still executes only its own run, kills
 * only the workers it started, and its run is executed by nobody else. Real processes, every backend.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/support';
import { Admin } from '../support/postgres';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { startWorker, until } from './support';

const kinds = await targetKinds('drill tests');

async function drill(target: Target, args: string[]) {
  const result = await runCli(['drill', '--json', ...args], {
    env: { DATABASE_URL: target.url, WAYBILL_SQLITE_SYNC: 'normal' },
  });
  // Exit 1 with nothing on stderr is the drill's own report finding a step lost or run twice: it is on stdout.
  if (result.code !== 0) throw new Error(`waybill drill exited ${result.code}: ${result.stderr}${result.stdout}`);
  return JSON.parse(result.stdout) as Record<string, unknown> & {
    kills: { step: number; resumedMs: number; releasedMs: number | null }[];
    inDoubtRedone: number;
    duplicatesRefused: number;
  };
}

async function schemaExists(name: string): Promise<boolean> {
  const admin = await Admin.connect();
  try {
    return (await admin.count('SELECT count(*) FROM pg_namespace WHERE nspname = $1', [name])) === 1;
  } finally {
    await admin.end();
  }
}

describe.each(kinds)('waybill drill on %s', (kind) => {
  it('runs on a throwaway store: two kills, one step redone each, nothing lost or twice, the user store untouched', async () => {
    const target = await makeTarget(kind);
    const store = await target.store();
    await store.createRun({
      id: 'users-run',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: 3, outbox: 'outbox.jsonl' }),
      totalSteps: 3,
    });
    const before = { runs: await store.listRuns({ claimTtlMs: 30_000 }), workers: await store.listWorkers() };

    const report = await drill(target, ['--steps', '200', '--kill-at', '100', '--kills', '2']);
    expect(report).toMatchObject({
      steps: 200,
      killAt: 100,
      committed: 200,
      lost: 0,
      stepsRedone: 2,
      executedTwice: 0,
      skipped: 0,
    });
    // A kill that lands after a step's delivery and before its commit (a starved machine lands more of them)
    // runs that step again, and the receiver refuses it by key: at most one such step per kill.
    expect(report.inDoubtRedone).toBe(report.duplicatesRefused);
    expect(report.inDoubtRedone).toBeLessThanOrEqual(2);
    // At 100 and 150, or the first step from there the drill saw in flight (one poll can outlast a 20 ms step).
    const [first, second] = report.kills.map((k) => k.step);
    expect(report.kills).toHaveLength(2);
    expect(first).toBeGreaterThanOrEqual(100);
    expect(second).toBeGreaterThanOrEqual(Math.max(150, first! + 1));
    expect(second).toBeLessThan(200);
    // The mechanism, not the speed: each kill was noticed by proof (the dead pid), not by a lease passing.
    for (const k of report.kills) expect(k.releasedMs).not.toBeNull();
    expect(report.store).toMatch(/^a throwaway store/);

    expect({ runs: await store.listRuns({ claimTtlMs: 30_000 }), workers: await store.listWorkers() }).toEqual(before);
    expect(await store.getRun('users-run')).toMatchObject({ status: 'queued', attempts: 0, owner: null });
    if (kind === 'sqlite') expect(existsSync(/\((\/[^,]+), removed\)/.exec(String(report.store))![1]!)).toBe(false);
    else expect(await schemaExists(/schema (\S+) on/.exec(String(report.store))![1]!)).toBe(false);
  }, 240_000);

  it('--in-place beside a live user worker: the drill executes only its run, kills only its workers, and nobody else executes its run', async () => {
    const target = await makeTarget(kind);
    const store = await target.store();
    const data = tempDir('waybill-outbox-');
    await store.createRun({
      id: 'users-busy',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: 100_000, outbox: 'outbox.jsonl', latencyMs: 50 }),
      totalSteps: 100_000,
    });
    const user = startWorker(target, ['--id', 'users-worker'], { WAYBILL_DATA_DIR: data.path });
    await until(
      'the user worker to take its run',
      async () => (await store.getRun('users-busy'))?.owner === 'users-worker',
    );
    await store.createRun({
      id: 'users-queued',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: 3, outbox: 'outbox.jsonl' }),
      totalSteps: 3,
    });

    const report = await drill(target, ['--in-place', '--steps', '120', '--kill-at', '60']);
    expect(report).toMatchObject({ committed: 120, lost: 0, stepsRedone: 1, executedTwice: 0 });
    expect(report.inDoubtRedone).toBe(report.duplicatesRefused);
    expect(report.inDoubtRedone).toBeLessThanOrEqual(1);

    expect(user.child.exitCode).toBeNull();
    expect(user.child.signalCode).toBeNull();
    expect(await store.getRun('users-busy')).toMatchObject({ status: 'running', owner: 'users-worker', attempts: 1 });
    expect(await store.getRun('users-queued')).toMatchObject({ status: 'queued', attempts: 0 });
    const drillRun = String(report.runId);
    const executors = new Set((await store.listCommitted(drillRun, { limit: 1000 })).map((c) => c.workerId));
    expect([...executors].every((w) => w?.startsWith('drill-'))).toBe(true);
    const usersExecutors = new Set(
      (await store.listCommitted('users-busy', { limit: 100_000 })).map((c) => c.workerId),
    );
    expect([...usersExecutors]).toEqual(['users-worker']);
  }, 240_000);
});
