/**
 * A holder stopped between its claim and its side effect (SIGSTOP, a paused VM) wakes with the claim's answer in
 * hand and its lease run out on the monotonic clock: a successor may have taken the key over and committed. It
 * must not start the side effect on that lease; it asks the store again with the same token. On every backend,
 * the stop made by the test's clock: the claim's answer is held back while the clock passes the lease and the
 * successor does its step.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { Store } from '../../lib/store/contract';
import { type StoreHandle, stepBackends } from '../support/backends';

const LEASE_MS = 300;
const list = await stepBackends();

describe.each(list)('a holder stopped past its lease on $label', (backend) => {
  let h: StoreHandle;

  beforeEach(async () => {
    h = await backend.open();
  });
  afterEach(() => h.close());

  /** The store, its next claim's answer held back while `meanwhile` runs: the stop, in the test's hands. */
  function stoppedAfterClaim(store: Store, meanwhile: () => Promise<void>): Store {
    let stopped = false;
    return {
      ...store,
      async claim(request) {
        const answer = await store.claim(request);
        if (!stopped) {
          stopped = true;
          await meanwhile();
        }
        return answer;
      },
    };
  }

  it('does not run the side effect once its lease has run out; it takes the successor’s result', async () => {
    const effects: string[] = [];
    const successor = new Checkpoint(h.store, 'run', { workerId: 'w2', leaseMs: LEASE_MS, clock: h.clock });
    const store = stoppedAfterClaim(h.store, async () => {
      await h.elapse(LEASE_MS * 3);
      const taken = await successor.runOnce('run:step:0', () => {
        effects.push('successor');
        return 'theirs';
      });
      expect(taken).toEqual({ result: 'theirs', status: 'executed' });
    });
    const holder = new Checkpoint(store, 'run', { workerId: 'w1', leaseMs: LEASE_MS, clock: h.clock });

    const outcome = await h.settle(
      holder.runOnce('run:step:0', () => {
        effects.push('holder');
        return 'mine';
      }),
    );

    expect(effects).toEqual(['successor']);
    expect(outcome.result).toBe('theirs');
    expect(outcome.status).not.toBe('executed');
    expect(await h.store.countCommitted('run')).toBe(1);
    expect(await h.store.listClaims({ claimTtlMs: LEASE_MS })).toEqual([]);
  });

  it('runs it when nobody took the key meanwhile: the same token renews the claim', async () => {
    const effects: string[] = [];
    const store = stoppedAfterClaim(h.store, () => h.elapse(LEASE_MS * 3));
    const holder = new Checkpoint(store, 'run', { workerId: 'w1', leaseMs: LEASE_MS, clock: h.clock });

    const outcome = await h.settle(
      holder.runOnce('run:step:0', () => {
        effects.push('holder');
        return 'mine';
      }),
    );

    expect(outcome).toEqual({ result: 'mine', status: 'executed' });
    expect(effects).toEqual(['holder']);
    expect(await h.store.countCommitted('run')).toBe(1);
    // Its first answer's attempt stands: renewed, not taken over from itself.
    expect((await h.store.listCommitted('run'))[0]).toMatchObject({ workerId: 'w1' });
  });
});
