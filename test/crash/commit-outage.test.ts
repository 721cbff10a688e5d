/**
 * The store is unavailable at the moment a step commits: another connection holds SQLite's write lock longer
 * than the store's busy timeout, so the commit fails with a transient error after the side effect has run.
 * The step must still be committed once, by the worker that ran it, and never run again.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { openSqliteStore } from '../../lib/store/sqlite';
import { tempDir } from '../support/tmp';

describe('crash: the store unavailable at commit', () => {
  it('retries the commit with the same token through a held write lock: each of 5 steps executed once, committed once', async () => {
    const path = tempDir('waybill-outage-').file('store.db');
    const store = openSqliteStore({ path, busyTimeoutMs: 50, synchronous: 'normal' });
    let attempts = 0;
    const commit = store.commit.bind(store);
    store.commit = (r) => {
      attempts++;
      return commit(r);
    };
    const executions = new Map<number, number>();
    try {
      const report = await runAgent(
        [0, 1, 2, 3, 4],
        new Checkpoint(store, 'run', { workerId: 'w1', leaseMs: 5_000 }),
        (item) => {
          executions.set(item, (executions.get(item) ?? 0) + 1);
          if (item === 2) {
            // Another process takes the write lock as step 2 finishes and keeps it 400 ms: 8 busy timeouts.
            const other = new Database(path);
            other.exec('BEGIN IMMEDIATE');
            setTimeout(() => {
              other.exec('COMMIT');
              other.close();
            }, 400).unref();
          }
          return item * 10;
        },
      );
      expect(report).toEqual({ processed: 5, executed: 5, skipped: 0, awaited: 0 });
      expect([...executions.values()]).toEqual([1, 1, 1, 1, 1]);
      // Five steps, and at least one refused attempt for step 2: the outage was real and was ridden out.
      expect(attempts).toBeGreaterThan(5);
      const committed = await store.listCommitted('run');
      expect(committed.map((c) => [c.step, c.resultJson, c.workerId])).toEqual(
        [0, 1, 2, 3, 4].map((n) => [n, String(n * 10), 'w1']),
      );
      expect(await store.listClaims({ claimTtlMs: 30_000 })).toEqual([]);
      expect(await store.listEvents('run')).toEqual([]);
      expect((await store.loadProgress('run'))?.step).toBe(5);
    } finally {
      await store.close();
    }
  });
});
