/**
 * The checkpoint protocol as /api/v1/checkpoint serves it (lib/api/protocol.ts), on every backend: the same
 * outcomes as the in-process Checkpoint on PostgreSQL as on SQLite — skipped, held, fenced, key reuse.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listClaims } from '../../lib/api/claims';
import { claim, commit, loadProgress, release, renew } from '../../lib/api/protocol';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const OPTIONS = { leaseMs: 60_000, claimTtlMs: 60_000 };
const list = await backends();

describe.each(list)('HTTP checkpoint protocol on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('claim → commit with progress → claim again is committed; a second claimer meanwhile is held', async () => {
    const first = await claim(store, { runId: 'r', key: 'r:step:0', fingerprint: 'f0', step: 0 }, OPTIONS);
    if (first.outcome !== 'claimed') throw new Error(`expected claimed, got ${first.outcome}`);
    expect(await claim(store, { runId: 'r', key: 'r:step:0' }, OPTIONS)).toMatchObject({
      outcome: 'held',
      key: 'r:step:0',
    });
    expect(await renew(store, { key: 'r:step:0', token: first.token }, OPTIONS)).toMatchObject({ renewed: true });
    await commit(
      store,
      {
        runId: 'r',
        key: 'r:step:0',
        token: first.token,
        result: { n: 1 },
        step: 0,
        fingerprint: 'f0',
        progress: { step: 1, state: { processed: 1 } },
      },
      OPTIONS,
    );
    expect(await claim(store, { runId: 'r', key: 'r:step:0', fingerprint: 'f0' }, OPTIONS)).toMatchObject({
      outcome: 'committed',
      result: { n: 1 },
      source: 'executed',
      step: 0,
    });
    expect(await loadProgress(store, 'r')).toMatchObject({
      step: 1,
      state: { processed: 1 },
      counters: { executed: 1 },
    });
    expect(await store.countCommitted('r')).toBe(1);
    expect(await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).toEqual([]);
  });

  it("a commit's input is stored beside its result; a release records which attempt failed", async () => {
    const first = await claim(store, { runId: 'in', key: 'in:step:0', step: 0 }, OPTIONS);
    if (first.outcome !== 'claimed') throw new Error(`expected claimed, got ${first.outcome}`);
    await commit(
      store,
      { runId: 'in', key: 'in:step:0', token: first.token, result: 'ok', step: 0, input: { prompt: 'é', n: [1, 2] } },
      OPTIONS,
    );
    expect((await store.getCommitted('in:step:0'))!.inputJson).toBe('{"prompt":"é","n":[1,2]}');
    expect((await store.readStep('in', 0)).committed!.inputJson).toBe('{"prompt":"é","n":[1,2]}');
    const second = await claim(store, { runId: 'in', key: 'in:step:1', step: 1 }, OPTIONS);
    if (second.outcome !== 'claimed') throw new Error(`expected claimed, got ${second.outcome}`);
    await release(store, { key: 'in:step:1', token: second.token, runId: 'in', step: 1, error: 'model 503' }, OPTIONS);
    expect(
      (await store.listEvents('in')).map((e) => [e.outcome, e.attempt, e.maxAttempts, e.retryAt, e.detail]),
    ).toEqual([['failed', 1, null, null, 'model 503']]);
  });

  it("retries after lost replies: a claim with the client's own token finds it its own, a commit (and its next claim) is recognised", async () => {
    const token = 'client-token-0000000001';
    const body = { runId: 'r', key: 'r:step:0', step: 0, workerId: 'py-1', token };
    expect(await claim(store, body, OPTIONS)).toMatchObject({ outcome: 'claimed', token, attempt: 1 });
    // The reply was lost; the client asks again with the same token: still its claim, not held by a stranger.
    expect(await claim(store, body, OPTIONS)).toMatchObject({ outcome: 'claimed', token, attempt: 1 });
    const commitBody = {
      runId: 'r',
      key: 'r:step:0',
      token,
      result: { n: 0 },
      step: 0,
      workerId: 'py-1',
      durationMs: 41.5,
      next: { key: 'r:step:1', step: 1, token: 'client-token-0000000002' },
    };
    expect(await commit(store, commitBody, OPTIONS)).toMatchObject({
      committed: true,
      next: { outcome: 'claimed', token: 'client-token-0000000002' },
    });
    // That reply was lost too: the same commit again succeeds, and the next key is still the client's.
    expect(await commit(store, commitBody, OPTIONS)).toMatchObject({
      committed: true,
      next: { outcome: 'claimed', token: 'client-token-0000000002' },
    });
    expect(await store.countCommitted('r')).toBe(1);
    expect((await store.listEvents('r')).map((e) => e.outcome)).toEqual([]);
    // Another worker's commit, or one with another result, is still no retry of this one.
    await expect(commit(store, { ...commitBody, workerId: 'py-2' }, OPTIONS)).rejects.toMatchObject({
      code: 'LEASE_LOST',
    });
    await expect(commit(store, { ...commitBody, result: { n: 1 } }, OPTIONS)).rejects.toMatchObject({
      code: 'LEASE_LOST',
    });
    expect((await store.getCommitted('r:step:0'))?.resultJson).toBe('{"n":0}');
    expect((await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).map((c) => [c.idemKey, c.token])).toEqual([
      ['r:step:1', 'client-token-0000000002'],
    ]);
  });

  it('a stale token cannot renew, commit or release: LEASE_LOST and nothing written', async () => {
    const first = await claim(store, { runId: 'r', key: 'k' }, OPTIONS);
    if (first.outcome !== 'claimed') throw new Error('expected claimed');
    await store.expireClaim('k', { actor: 'test', force: true, claimTtlMs: OPTIONS.claimTtlMs });
    const second = await claim(store, { runId: 'r', key: 'k' }, OPTIONS);
    if (second.outcome !== 'claimed') throw new Error('expected claimed');
    await expect(renew(store, { key: 'k', token: first.token }, OPTIONS)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(
      commit(store, { runId: 'r', key: 'k', token: first.token, result: 'late' }, OPTIONS),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(
      release(store, { runId: 'r', key: 'k', token: first.token, error: 'x' }, OPTIONS),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(await store.countCommitted('r')).toBe(0);
    expect((await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).map((c) => c.token)).toEqual([second.token]);
    await commit(store, { runId: 'r', key: 'k', token: second.token, result: 'on time' }, OPTIONS);
    expect((await store.getCommitted('k'))?.resultJson).toBe('"on time"');
  });

  it('a committed key claimed with another fingerprint is IDEMPOTENCY_KEY_REUSE, recorded on the timeline', async () => {
    const first = await claim(store, { runId: 'r', key: 'k', fingerprint: 'a' }, OPTIONS);
    if (first.outcome !== 'claimed') throw new Error('expected claimed');
    await commit(store, { runId: 'r', key: 'k', token: first.token, result: 1, fingerprint: 'a' }, OPTIONS);
    await expect(claim(store, { runId: 'r', key: 'k', fingerprint: 'b' }, OPTIONS)).rejects.toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSE',
    });
    expect((await store.listEvents('r')).map((e) => e.outcome)).toEqual(['key_reuse']);
    expect(await store.countCommitted('r')).toBe(1);
  });

  it('lists claims oldest first in keyset pages, and refuses a cursor it did not make', async () => {
    for (let i = 0; i < 5; i++) await claim(store, { runId: 'r', key: `k${i}` }, OPTIONS);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await listClaims(store, { limit: 2, cursor }, OPTIONS.claimTtlMs);
      seen.push(...page.claims.map((c) => c.key));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect([...seen].sort()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4']);
    expect(new Set(seen).size).toBe(5);
    await expect(listClaims(store, { cursor: 'bm90LWEtY3Vyc29y' }, OPTIONS.claimTtlMs)).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('commit with next claims the next key in the same call: three steps in four calls, no claim left', async () => {
    const first = await claim(store, { runId: 'r', key: 'r:0', step: 0 }, OPTIONS);
    if (first.outcome !== 'claimed') throw new Error('expected claimed');
    let token = first.token;
    for (let step = 0; step < 3; step++) {
      const last = step === 2;
      const answer = await commit(
        store,
        {
          runId: 'r',
          key: `r:${step}`,
          token,
          result: step,
          step,
          progress: { step: step + 1, state: { processed: step + 1 } },
          next: last ? undefined : { key: `r:${step + 1}`, step: step + 1 },
        },
        OPTIONS,
      );
      if (last) {
        expect(answer).toEqual({ key: 'r:2', committed: true, run: null });
      } else {
        expect(answer.next).toMatchObject({ outcome: 'claimed', key: `r:${step + 1}`, attempt: 1, tookOver: false });
        expect((await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).map((c) => c.idemKey)).toEqual([
          `r:${step + 1}`,
        ]);
        token = (answer.next as { token: string }).token;
      }
    }
    expect(await store.countCommitted('r')).toBe(3);
    expect(await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).toEqual([]);
    expect(await loadProgress(store, 'r')).toMatchObject({ step: 3, counters: { executed: 3 } });

    // A next key already committed comes back committed; another run's key is no claim ahead (the commit
    // stands); a refused commit claims nothing.
    const done = await claim(store, { runId: 's', key: 's:1' }, OPTIONS);
    if (done.outcome !== 'claimed') throw new Error('expected claimed');
    await commit(store, { runId: 's', key: 's:1', token: done.token, result: 'one' }, OPTIONS);
    const again = await claim(store, { runId: 's', key: 's:0' }, OPTIONS);
    if (again.outcome !== 'claimed') throw new Error('expected claimed');
    const answer = await commit(
      store,
      { runId: 's', key: 's:0', token: again.token, result: 'x', next: { key: 's:1' } },
      OPTIONS,
    );
    expect(answer.next).toMatchObject({ outcome: 'committed', key: 's:1', result: 'one' });
    const other = await claim(store, { runId: 't', key: 't:0' }, OPTIONS);
    if (other.outcome !== 'claimed') throw new Error('expected claimed');
    const crossed = await commit(
      store,
      { runId: 't', key: 't:0', token: other.token, result: 'z', next: { key: 'r:1' } },
      OPTIONS,
    );
    expect(crossed).toMatchObject({ key: 't:0', committed: true, next: null });
    await expect(
      commit(store, { runId: 's', key: 's:0', token: again.token, result: 'y', next: { key: 's:2' } }, OPTIONS),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).toEqual([]);
  });

  it('release without an error gives a claim back with no failed event; with one, records it', async () => {
    const unused = await claim(store, { runId: 'r', key: 'a' }, OPTIONS);
    const failed = await claim(store, { runId: 'r', key: 'b' }, OPTIONS);
    if (unused.outcome !== 'claimed' || failed.outcome !== 'claimed') throw new Error('expected claimed');
    await release(store, { runId: 'r', key: 'a', token: unused.token }, OPTIONS);
    await release(store, { runId: 'r', key: 'b', token: failed.token, error: 'model said 503' }, OPTIONS);
    expect(await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).toEqual([]);
    expect((await store.listEvents('r')).map((e) => [e.outcome, e.idemKey, e.detail])).toEqual([
      ['failed', 'b', 'model said 503'],
    ]);
  });
});
