/**
 * Kill -9 a real worker process at each boundary of claim → execute → commit, resume in a new process, and
 * count: steps lost, keys committed twice, side effects run twice. SQLite file per test, real SIGKILL.
 *
 * Both processes use a 250 ms lease, so the claim the killed process leaves behind is orphaned a quarter of
 * a second after the kill and the resuming process takes it over (it waits for the expiry if it gets there
 * first). No assertion depends on how fast anything runs: every count below is fixed by where the process
 * was stopped, and stops happen at announced points, not after a delay.
 */

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { stepKey } from '../../lib/checkpoint/keys';
import type { CrashChildArgs, CrashChildReport, KillPoint } from '../fixtures/crash-child';
import { finish, killHard, spawnFixture } from '../support/child';
import { tempDir } from '../support/tmp';
import { countByKey, readEffects, snapshot, until } from './helpers';

const LEASE_MS = 250;

function setup(runId: string, steps: number) {
  const dir = tempDir('waybill-crash-');
  const base: CrashChildArgs = {
    db: dir.file('store.db'),
    effects: dir.file('effects.log'),
    runId,
    steps,
    leaseMs: LEASE_MS,
    workerId: 'first',
    mode: 'agent',
  };
  return base;
}

const keys = (runId: string, steps: number) => Array.from({ length: steps }, (_, i) => stepKey(runId, i));

describe('crash: resume', () => {
  it('a process killed after a commit but before its map write is resumed by skipping exactly that step', async () => {
    // The article's loop writes the map (saveProgress) in its own transaction after each commit. Killed
    // between the two, the map says 29 while 30 steps are committed: the next process starts at step 29,
    // finds it committed, skips it (1 skip, no side effect), and executes 30..49 (20 steps).
    const N = 50;
    const K = 29;
    const base = setup('resume', N);
    const first = spawnFixture('crash-child.ts', {
      ...base,
      mode: 'article-loop',
      kill: { point: 'after-commit', step: K },
    });
    await first.waitForLine(new RegExp(`^POINT after-commit step=${K}$`));
    await killHard(first);

    const before = snapshot(base.db, base.runId);
    expect(before.committed).toHaveLength(K + 1);
    expect(before.progress).toMatchObject({ step: K, state: { processed: K } });

    const second = spawnFixture('crash-child.ts', { ...base, workerId: 'second' });
    const report = await finish<CrashChildReport>(second);
    expect(report).toMatchObject({ executed: N - K - 1, skipped: 1, awaited: 0, processed: K + (N - K - 1) });
    expect(report.executedSteps).toEqual(Array.from({ length: N - K - 1 }, (_, i) => K + 1 + i));

    const after = snapshot(base.db, base.runId);
    expect(after.committed.map((c) => c.key)).toEqual(keys(base.runId, N));
    expect(after.claims).toEqual([]);
    // The map's executed counter is 49 while 50 side effects ran: step 29's count was still in the killed
    // process's memory (it rides with the progress write that never happened). The map may lag; the cargo
    // does not — the committed rows and the effects file are exact.
    expect(after.progress).toEqual({ step: N, state: { processed: N - 1 }, executed: N - 1, skipped: 1, awaited: 0 });
    expect(after.events).toEqual({ skipped: 1 });
    const effects = readEffects(base.effects);
    expect(effects).toHaveLength(N);
    expect([...countByKey(effects).values()].every((n) => n === 1)).toBe(true);

    // A third process has nothing left to do: the map is at the end, nothing runs, nothing is written.
    const third = spawnFixture('crash-child.ts', { ...base, workerId: 'third' });
    expect(await finish<CrashChildReport>(third)).toMatchObject({
      executed: 0,
      skipped: 0,
      awaited: 0,
      processed: N - 1,
    });
    expect(readEffects(base.effects)).toHaveLength(N);
    expect(snapshot(base.db, base.runId).progress).toEqual(after.progress);
  });

  /**
   * What each kill point leaves, for N = 20 steps killed at step K = 7, with runAgent (whose map write rides
   * in each step's commit transaction):
   *
   * | point          | committed at kill | claim left | effects at kill | resumed executes | effects at end |
   * |----------------|-------------------|------------|-----------------|------------------|----------------|
   * | after-claim    | 7 (0..6)          | step 7     | 7               | 13 (7..19)       | 20             |
   * | during-execute | 7                 | step 7     | 7 (*)           | 13               | 20             |
   * | after-execute  | 7                 | step 7     | 8               | 13               | 21: step 7 ×2  |
   * | after-commit   | 8 (0..7)          | step 8 (†) | 8               | 12 (8..19)       | 20             |
   *
   * (*) 'during-execute' stops inside fn before its side effect (the append) happens, so the effect runs
   * once, in the resumed process. Only 'after-execute' — the side effect happened, the commit did not — runs
   * it twice, which is the window the article names and only the receiver's idempotency key can close: both
   * lines carry the same key. Orphaned claims are taken over with attempt 2 and an `expired` event.
   *
   * (†) runAgent claims step 8 in step 7's commit transaction, so a process killed after that commit leaves
   * step 8 claimed though its side effect never started; the resumed process takes it over like any orphan.
   */
  const cases: {
    point: KillPoint;
    committedAtKill: number;
    effectsAtKill: number;
    orphanStep: number;
    twice: boolean;
  }[] = [
    { point: 'after-claim', committedAtKill: 7, effectsAtKill: 7, orphanStep: 7, twice: false },
    { point: 'during-execute', committedAtKill: 7, effectsAtKill: 7, orphanStep: 7, twice: false },
    { point: 'after-execute', committedAtKill: 7, effectsAtKill: 8, orphanStep: 7, twice: true },
    { point: 'after-commit', committedAtKill: 8, effectsAtKill: 8, orphanStep: 8, twice: false },
  ];

  it.each(cases)('kill -9 $point: 0 steps lost, 0 double commits, side effect twice only after execute', async (c) => {
    const N = 20;
    const K = 7;
    const base = setup(`phase-${c.point}`, N);
    const first = spawnFixture('crash-child.ts', { ...base, kill: { point: c.point, step: K } });
    await first.waitForLine(new RegExp(`^POINT ${c.point} step=${K}$`));
    if (c.point === 'during-execute') {
      // The worker is alive and blocked in fn: its lease keeper must be renewing the claim. Wait until the
      // store shows a renewal (heartbeat moved past claimed_at) before killing it.
      await until('a lease renewal by the blocked worker', () => {
        const [claim] = snapshot(base.db, base.runId).claims;
        return claim !== undefined && claim.heartbeatAt !== null && claim.heartbeatAt > claim.claimedAt;
      });
    }
    await killHard(first);

    const atKill = snapshot(base.db, base.runId);
    expect(atKill.committed).toHaveLength(c.committedAtKill);
    expect(atKill.claims.map((cl) => [cl.key, cl.workerId])).toEqual([[stepKey(base.runId, c.orphanStep), 'first']]);
    expect(atKill.progress?.step).toBe(c.committedAtKill);
    expect(readEffects(base.effects)).toHaveLength(c.effectsAtKill);

    const second = spawnFixture('crash-child.ts', { ...base, workerId: 'second' });
    const report = await finish<CrashChildReport>(second);
    const resumedFrom = c.committedAtKill;
    expect(report).toMatchObject({ executed: N - resumedFrom, skipped: 0, awaited: 0, processed: N });

    const end = snapshot(base.db, base.runId);
    // Lost steps: 0. Double commits: 0 (one row per key, and exactly the N keys).
    expect(end.committed.map((r) => r.key)).toEqual(keys(base.runId, N));
    expect(end.claims).toEqual([]);
    for (const row of end.committed) {
      expect(row.result.key).toBe(row.key);
      expect(row.result.pid).toBe(row.step < resumedFrom ? first.pid : second.pid);
      expect(row.result.attempt).toBe(row.step === c.orphanStep ? 2 : 1);
    }
    expect(end.progress).toEqual({ step: N, state: { processed: N }, executed: N, skipped: 0, awaited: 0 });
    expect(end.events).toEqual({ expired: 1 });
    expect(end.eventsByKey).toEqual([{ key: stepKey(base.runId, c.orphanStep), outcome: 'expired' }]);

    const effects = readEffects(base.effects);
    expect(effects).toHaveLength(c.twice ? N + 1 : N);
    const counts = countByKey(effects);
    expect(counts.size).toBe(N);
    for (const [key, n] of counts) expect(n, key).toBe(c.twice && key === stepKey(base.runId, K) ? 2 : 1);
    if (c.twice) {
      expect(effects.filter((e) => e.key === stepKey(base.runId, K)).map((e) => [e.attempt, e.pid])).toEqual([
        [1, first.pid],
        [2, second.pid],
      ]);
    }
  });

  it("the article's experiment: 1,000 steps, SIGKILL mid-execute at step 620, resume redoes exactly 1 step", async () => {
    // "Mid-execute" as in the article: the model call for step 620 has happened (its effect line is written)
    // and the process dies before the call returns. With per-step saves the resumed process redoes exactly
    // that one step: step 620 is claimed twice (attempt 1 by the killed process, attempt 2 on resume), the
    // effects file has 1,001 lines (620 twice, every other key once), and 1,000 keys are committed once each.
    const N = 1000;
    const K = 620;
    const base = setup('article-1000', N);
    const first = spawnFixture('crash-child.ts', { ...base, kill: { point: 'after-effect', step: K } });
    await first.waitForLine(new RegExp(`^POINT after-effect step=${K}$`));
    await killHard(first);
    expect(snapshot(base.db, base.runId).committed).toHaveLength(K);

    const second = spawnFixture('crash-child.ts', { ...base, workerId: 'second' });
    const report = await finish<CrashChildReport>(second);
    expect(report).toMatchObject({ executed: N - K, skipped: 0, awaited: 0, processed: N });
    expect(report.executedSteps[0]).toBe(K);

    const end = snapshot(base.db, base.runId);
    expect(end.committed).toHaveLength(N);
    expect(new Set(end.committed.map((r) => r.key)).size).toBe(N);
    expect(end.progress).toEqual({ step: N, state: { processed: N }, executed: N, skipped: 0, awaited: 0 });
    expect(end.events).toEqual({ expired: 1 });

    const effects = readEffects(base.effects);
    expect(effects).toHaveLength(N + 1);
    const redone = [...countByKey(effects)].filter(([, n]) => n > 1);
    expect(redone).toEqual([[stepKey(base.runId, K), 2]]);
    expect(effects.filter((e) => e.key === stepKey(base.runId, K)).map((e) => e.attempt)).toEqual([1, 2]);
  });

  it('a killed process leaves the SQLite file consistent for any other opener', async () => {
    // After a SIGKILL mid-transaction-stream, WAL recovery leaves a file whose integrity check passes.
    const base = setup('integrity', 200);
    const first = spawnFixture('crash-child.ts', { ...base, kill: { point: 'after-execute', step: 150 } });
    await first.waitForLine(/^POINT after-execute step=150$/);
    await killHard(first);
    const db = new Database(base.db);
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.prepare('SELECT count(*) AS n FROM committed').get()).toEqual({ n: 150 });
    } finally {
      db.close();
    }
  });
});
