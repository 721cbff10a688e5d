/**
 * A claim's lease starts when its transaction holds SQLite's write lock, not when it was asked for. BEGIN
 * IMMEDIATE may wait up to two thirds of a lease for another process's lock (lib/store/shared/sqlite-timeouts.ts); a lease dated
 * from before that wait would be granted partly spent, and a peer could take the step over while its side effect
 * runs. Alone and in a group commit's batch alike. The lock is held by a worker thread on its own connection, so
 * the wait is real and its length known: the thread keeps the lock holdMs after the test records its start.
 */
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../../lib/store/sqlite';
import { makeTempDir, type TempDir } from '../support/tmp';

const HOLD_MS = 600;
const LEASE_MS = 30_000;

let dir: TempDir;
beforeEach(() => {
  dir = makeTempDir('waybill-lock-');
});
afterEach(() => dir.remove());

describe.each([true, false])('SQLite, group commit %s', (groupCommit) => {
  it('dates a claim that waited for the write lock from after the wait', async () => {
    const path = dir.file('store.db');
    const store = openSqliteStore({ path, leaseMs: LEASE_MS, groupCommit });
    try {
      const flags = new Int32Array(new SharedArrayBuffer(12));
      const holder = new Worker(new URL('../support/hold-write-lock.mjs', import.meta.url), {
        workerData: { path, flags: flags.buffer, holdMs: HOLD_MS },
      });
      const exited = new Promise((resolve, reject) => holder.on('exit', resolve).on('error', reject));
      // Until the thread holds the lock: the main thread may block here, nothing else runs meanwhile.
      Atomics.wait(flags, 1, 0, 10_000);
      expect(Atomics.load(flags, 1)).toBe(1);

      const asked = Date.now();
      Atomics.store(flags, 0, 1);
      Atomics.notify(flags, 0);
      const outcome = await store.claim({
        idemKey: 'run-1:step:0',
        runId: 'run-1',
        token: 'tok-1',
        workerId: 'w1',
        step: 0,
        attempt: 1,
        leaseMs: LEASE_MS,
        claimTtlMs: LEASE_MS,
      });
      await exited;

      expect(outcome.kind).toBe('claimed');
      const expiresMs = outcome.kind === 'claimed' ? outcome.leaseExpiresAt * 1000 : 0;
      // At least the hold after `asked` (a little under, for the thread's timer granularity): a whole lease
      // from the moment the lock was had. Dated from before the wait it would be asked + LEASE_MS.
      expect(expiresMs - asked).toBeGreaterThanOrEqual(LEASE_MS + HOLD_MS - 50);
    } finally {
      await store.close();
    }
  });
});
