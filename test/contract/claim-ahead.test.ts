/**
 * Claiming ahead, on every backend: a commit that names the next key claims it in the same transaction, so
 * runAgent pays one transaction per executed step. The claim is decided exactly as claim() decides it, is
 * only made when the commit succeeds, and goes back without a trace when the loop stops before using it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { stepKey } from '../../lib/checkpoint/keys';
import { LeaseLostError } from '../../lib/errors';
import type { Store } from '../../lib/store/contract';
import { type StoreHandle, stepBackends } from '../support/backends';
import { claimRequest, commitRequest } from '../support/requests';

const LEASE_MS = 60_000;
const list = await stepBackends();

/** The store with its protocol calls counted: what a step costs in transactions. */
function counted(store: Store) {
  const calls = { claim: 0, commit: 0, releaseClaim: 0, saveProgress: 0 };
  const proxy = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      if (prop in calls) calls[prop as keyof typeof calls]++;
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
  return { proxy, calls };
}

describe.each(list)('claim ahead on $label', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('claims a free next key in the commit, as claim() would, and commit without next returns null', async () => {
    const first = claimRequest('k0');
    await store.claim(first);
    const next = claimRequest('k1', { step: 1 });
    const { next: outcome } = await store.commit(commitRequest(first, { next: next }));
    expect(outcome).toMatchObject({ kind: 'claimed', attempt: 1, tookOverFrom: null });
    const claims = await store.listClaims({ claimTtlMs: LEASE_MS });
    expect(claims.map((c) => [c.idemKey, c.token, c.step])).toEqual([['k1', next.token, 1]]);
    // The claim is ours: claiming again with the same token carries on with it, and it commits.
    expect(await store.claim(next)).toMatchObject({ kind: 'claimed', attempt: 1 });
    expect((await store.commit(commitRequest(next))).next).toBeNull();
    expect(await store.countCommitted('run')).toBe(2);
    expect(await store.listClaims({ claimTtlMs: LEASE_MS })).toEqual([]);
  });

  it('reports a committed next key as committed and a held one as held, writing no claim for either', async () => {
    const done = claimRequest('done');
    await store.claim(done);
    await store.commit(commitRequest(done));
    const other = claimRequest('held', { workerId: 'w2' });
    await store.claim(other);

    const a = claimRequest('a');
    await store.claim(a);
    const { next: skipped } = await store.commit(commitRequest(a, { next: claimRequest('done') }));
    expect(skipped).toMatchObject({ kind: 'committed', row: { idemKey: 'done', resultJson: '"ok"' } });
    const b = claimRequest('b');
    await store.claim(b);
    const { next: held } = await store.commit(commitRequest(b, { next: claimRequest('held') }));
    expect(held).toMatchObject({ kind: 'held', holder: { idemKey: 'held', token: other.token, workerId: 'w2' } });
    expect((await store.listClaims({ claimTtlMs: LEASE_MS })).map((c) => [c.idemKey, c.token])).toEqual([
      ['held', other.token],
    ]);
  });

  it('claims nothing when the commit itself is refused', async () => {
    const stale = claimRequest('k0');
    await store.claim(stale);
    await store.expireClaim('k0', { actor: 'test', force: true, claimTtlMs: LEASE_MS });
    await expect(store.commit(commitRequest(stale, { next: claimRequest('k1') }))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect(await store.listClaims({ claimTtlMs: LEASE_MS })).toEqual([]);
    expect(await store.countCommitted('run')).toBe(0);
  });

  it('runAgent: 12 executed steps cost 1 claim and 12 commits; a rerun costs 1 read-only claim per step', async () => {
    const { proxy, calls } = counted(store);
    const items = Array.from({ length: 12 }, (_, i) => i);
    const report = await runAgent(items, new Checkpoint(proxy, 'run'), (x) => x * 2);
    expect(report).toEqual({ processed: 12, executed: 12, skipped: 0, awaited: 0 });
    expect(calls).toEqual({ claim: 1, commit: 12, releaseClaim: 0, saveProgress: 0 });
    expect(await store.listClaims({ claimTtlMs: LEASE_MS })).toEqual([]);
    expect((await store.listCommitted('run')).map((r) => JSON.parse(r.resultJson))).toEqual(items.map((x) => x * 2));

    // Another checkpoint whose map is behind (a fresh run id over the same keys is not possible; reset the
    // map instead): every step is found committed, each by its own claim, and nothing is claimed or written.
    await store.saveProgress({ runId: 'run', step: 0, stateJson: '{}', executed: 0, skipped: 0, awaited: 0 });
    const again = counted(store);
    const rerun = await runAgent(items, new Checkpoint(again.proxy, 'run'), () => {
      throw new Error('must not run');
    });
    expect(rerun).toMatchObject({ executed: 0, skipped: 12 });
    expect(again.calls).toEqual({ claim: 12, commit: 0, releaseClaim: 0, saveProgress: 1 });
  });

  it('a loop stopped between steps gives back the claim it took ahead: no claim, no failed event', async () => {
    const controller = new AbortController();
    const items = Array.from({ length: 6 }, (_, i) => i);
    const { proxy, calls } = counted(store);
    await expect(
      runAgent(
        items,
        new Checkpoint(proxy, 'run'),
        (x) => {
          if (x === 2) controller.abort();
          return x;
        },
        { signal: controller.signal },
      ),
    ).rejects.toMatchObject({ name: 'AbortError' });
    // Steps 0..2 committed; step 3 was claimed in step 2's commit and released when the loop saw the abort.
    expect(await store.countCommitted('run')).toBe(3);
    expect(calls.releaseClaim).toBe(1);
    expect(await store.listClaims({ claimTtlMs: LEASE_MS })).toEqual([]);
    expect((await store.listEvents('run')).map((e) => e.outcome)).toEqual([]);
    // The next loop starts at step 3 and claims it afresh.
    const resumed = await runAgent(items, new Checkpoint(store, 'run'), (x) => x);
    expect(resumed).toMatchObject({ processed: 6, executed: 3, skipped: 0 });
    expect(await store.getCommitted(stepKey('run', 5))).toMatchObject({ resultJson: '5' });
  });
});
