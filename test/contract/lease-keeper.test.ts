/**
 * The lease keeper on the checkpoint's clock, counted exactly: renewals come at each third of the lease
 * after the claim (less what a claim taken ahead has aged), none after the step ends, and a renewal that
 * finds the claim gone aborts the side effect. On SQLite's ManualClock, so a count can only be the clock's.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { ManualClock } from '../../lib/clock';
import { LeaseLostError } from '../../lib/errors';
import type { Store } from '../../lib/store/contract';
import { type StoreHandle, sqliteBackend } from '../support/backends';

describe('lease keeper on a ManualClock', () => {
  let h: StoreHandle;
  let clock: ManualClock;
  let renewals: number[];

  beforeEach(async () => {
    h = await sqliteBackend.open();
    clock = h.clock as ManualClock;
    renewals = [];
    const renew = h.store.renewClaim.bind(h.store);
    h.store.renewClaim = (key, token, leaseMs) => {
      renewals.push(clock.monotonic());
      return renew(key, token, leaseMs);
    };
  });
  afterEach(() => h.close());

  const gate = () => {
    let open!: () => void;
    return { opened: new Promise<void>((r) => (open = r)), open: () => open() };
  };

  it('renews at each third of the lease while the side effect runs, and never after it commits', async () => {
    const checkpoint = new Checkpoint(h.store, 'run', { workerId: 'w1', leaseMs: 900, clock });
    const step = gate();
    const started = gate();
    const run = checkpoint.runOnce('run:step:0', async () => {
      started.open();
      await step.opened;
      return 'done';
    });
    await started.opened;
    const claimedAt = clock.monotonic();
    await clock.tick(299);
    expect(renewals).toEqual([]);
    await clock.tick(1);
    await clock.tick(650);
    expect(renewals.map((t) => t - claimedAt)).toEqual([300, 600, 900]);
    step.open();
    expect(await run).toEqual({ result: 'done', status: 'executed' });
    await clock.tick(3_000);
    expect(renewals).toHaveLength(3);
    expect(await h.store.listClaims({ claimTtlMs: 900 })).toEqual([]);
  });

  it('a claim taken ahead is first renewed a third of a lease after it was taken, not after it is used', async () => {
    const checkpoint = new Checkpoint(h.store, 'run', { workerId: 'w1', leaseMs: 900, clock });
    await checkpoint.runOnce('run:step:0', () => 0, { step: 0, next: { idemKey: 'run:step:1', step: 1 } });
    const takenAt = clock.monotonic();
    await clock.tick(200);
    const step = gate();
    const started = gate();
    const run = checkpoint.runOnce(
      'run:step:1',
      async () => {
        started.open();
        await step.opened;
        return 1;
      },
      { step: 1 },
    );
    await started.opened;
    await clock.tick(100);
    expect(renewals.map((t) => t - takenAt)).toEqual([300]);
    step.open();
    expect(await run).toEqual({ result: 1, status: 'executed' });
  });

  it('a renewal that finds the claim gone aborts the side effect with LeaseLostError', async () => {
    const checkpoint = new Checkpoint(h.store, 'run', { workerId: 'w1', leaseMs: 900, clock });
    const started = gate();
    const run = checkpoint.runOnce('run:step:0', async ({ signal }) => {
      started.open();
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    });
    const failed = expect(run).rejects.toBeInstanceOf(LeaseLostError);
    await started.opened;
    expect(await (h.store as Store).expireClaim('run:step:0', { actor: 'ops', force: true, claimTtlMs: 900 })).toBe(
      'expired',
    );
    await clock.tick(299);
    expect(renewals).toEqual([]);
    await clock.tick(1);
    await failed;
    expect(renewals).toHaveLength(1);
    expect((await h.store.listEvents('run')).map((e) => e.outcome)).toEqual(['expired', 'failed']);
  });
});
