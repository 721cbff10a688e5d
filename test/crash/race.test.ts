/**
 * Two real processes race over the same 1,000 keys of one SQLite file. Every key must be committed exactly
 * once and its side effect run by exactly one process, never two at once.
 *
 * Concurrency is detected, not assumed away: each side effect creates `<step>.lock` with O_EXCL at its start
 * and removes it at its end, and awaits 1 ms in between (lease renewal keeps running), so a second side effect
 * of the same key starting meanwhile fails to create the lock and is written to a violations file.
 * Leases are 60 s: no claim can pass during the test, so no takeover is legitimate here.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { stepKey } from '../../lib/checkpoint/keys';
import { seededShuffle } from '../../lib/random';
import type { CrashChildArgs, CrashChildReport } from '../fixtures/crash-child';
import { finish, spawnFixture } from '../support/child';
import { tempDir } from '../support/tmp';
import { countByKey, readEffects, snapshot } from './helpers';

const N = 1000;

/** A seeded permutation of 0..n-1 (lib/random.ts), so a failure can be replayed. */
const shuffled = (n: number, seed: number): number[] =>
  seededShuffle(
    Array.from({ length: n }, (_, i) => i),
    seed,
  );

describe('crash: two processes racing over the same keys', () => {
  const orders = [
    { name: 'same order', a: Array.from({ length: N }, (_, i) => i), b: Array.from({ length: N }, (_, i) => i) },
    { name: 'shuffled', a: shuffled(N, 1), b: shuffled(N, 2) },
  ];

  it.each(orders)(
    '$name: each of 1,000 keys committed once, executed by exactly one process',
    async ({ name, a, b }) => {
      const dir = tempDir('waybill-race-');
      const runId = 'race';
      const lockDir = dir.file('locks');
      mkdirSync(lockDir);
      const base: CrashChildArgs = {
        db: dir.file('store.db'),
        effects: dir.file('effects.log'),
        runId,
        steps: N,
        leaseMs: 60_000,
        workerId: '',
        mode: 'race',
        lockDir,
        violations: dir.file('violations.log'),
        waitForGo: true,
        effectMs: 1,
      };
      // With different first keys each process's first side effect waits for the other's, so both provably
      // execute at least one key while the other is running. (With the same first key that would deadlock.)
      const handshake = a[0] !== b[0];
      const markA = dir.file('a.started');
      const markB = dir.file('b.started');
      const A = spawnFixture('crash-child.ts', {
        ...base,
        workerId: 'A',
        order: a,
        handshake: handshake ? { mine: markA, theirs: markB } : undefined,
      });
      // B opens the store only after A has migrated it, so both do not race on an empty file's first open.
      await A.waitForLine(/^READY/);
      const B = spawnFixture('crash-child.ts', {
        ...base,
        workerId: 'B',
        order: b,
        handshake: handshake ? { mine: markB, theirs: markA } : undefined,
      });
      await B.waitForLine(/^READY/);
      A.send('GO');
      B.send('GO');
      const [ra, rb] = await Promise.all([finish<CrashChildReport>(A), finish<CrashChildReport>(B)]);

      // Every call returned one of the three statuses; between them the two processes executed each key once.
      expect(ra.executed + ra.skipped + ra.awaited).toBe(N);
      expect(rb.executed + rb.skipped + rb.awaited).toBe(N);
      expect(ra.executed + rb.executed).toBe(N);
      const byA = new Set(ra.executedSteps);
      const byB = new Set(rb.executedSteps);
      expect(byA.size).toBe(ra.executed);
      expect(byB.size).toBe(rb.executed);
      expect([...byA].filter((s) => byB.has(s))).toEqual([]);
      expect(new Set([...byA, ...byB]).size).toBe(N);
      if (handshake) {
        expect(ra.executed).toBeGreaterThanOrEqual(1);
        expect(rb.executed).toBeGreaterThanOrEqual(1);
      }

      // The store agrees with the processes: one committed row per key, written by the one that executed it.
      const end = snapshot(base.db, runId);
      expect(end.committed).toHaveLength(N);
      expect(end.committed.map((r) => r.key)).toEqual(Array.from({ length: N }, (_, i) => stepKey(runId, i)));
      for (const row of end.committed) {
        const worker = byA.has(row.step) ? 'A' : 'B';
        expect(row.workerId).toBe(worker);
        expect(row.result).toMatchObject({ worker, attempt: 1 });
      }
      expect(end.claims).toEqual([]);
      expect(end.events).toEqual({});

      // The side effects: 1,000 lines, each key once, never two at once.
      const effects = readEffects(base.effects);
      expect(effects).toHaveLength(N);
      expect([...countByKey(effects).values()].every((n) => n === 1)).toBe(true);
      for (const e of effects) expect(e.worker).toBe(byA.has(Number(e.key.split(':').pop())) ? 'A' : 'B');
      expect(existsSync(base.violations!) ? readFileSync(base.violations!, 'utf8') : '').toBe('');

      console.info(
        `race (${name}): A executed ${ra.executed}, awaited ${ra.awaited}, skipped ${ra.skipped}; ` +
          `B executed ${rb.executed}, awaited ${rb.awaited}, skipped ${rb.skipped}`,
      );
    },
  );
});
