/**
 * The checkpoint protocol as /api/v1/checkpoint serves it (lib/api/protocol.ts), on every backend: the same
 * outcomes as the in-process Checkpoint on PostgreSQL as on SQLite — skipped, held, fenced, key reuse.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listClaims } from '../../lib/api/claims';
import { claim, commit, loadProgress, release, renew } from '../../lib/api/protocol';
import type { Store } from '../../lib/store/types';
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
    expect(await claim(store, { runId: 'r', key: 'r:step:0' }, OPTIONS)).toMatchObject({ outcome: 'held', key: 'r:step:0' });
    expect(await renew(store, { key: 'r:step:0', token: first.token }, OPTIONS)).toMatchObject({ renewed: true });
    await commit(store, { runId: 'r', key: 'r:step:0', token: first.token, result: { n: 1 }, step: 0, fingerprint: 'f0',
      progress: { step: 1, state: { processed: 1 } } }, OPTIONS);
    expect(await claim(store, { runId: 'r', key: 'r:step:0', fingerprint: 'f0' }, OPTIONS))
      .toMatchObject({ outcome: 'committed', result: { n: 1 }, source: 'executed', step: 0 });
    expect(await loadProgress(store, 'r')).toMatchObject({ step: 1, state: { processed: 1 }, counters: { executed: 1 } });
    expect(await store.countCommitted('r')).toBe(1);
    expect(await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).toEqual([]);
  });

  it('a stale token cannot renew, commit or release: LEASE_LOST and nothing written', async () => {
    const first = await claim(store, { runId: 'r', key: 'k' }, OPTIONS);
    if (first.outcome !== 'claimed') throw new Error('expected claimed');
    await store.expireClaim('k', { actor: 'test', force: true, claimTtlMs: OPTIONS.claimTtlMs });
    const second = await claim(store, { runId: 'r', key: 'k' }, OPTIONS);
    if (second.outcome !== 'claimed') throw new Error('expected claimed');
    await expect(renew(store, { key: 'k', token: first.token }, OPTIONS)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(commit(store, { runId: 'r', key: 'k', token: first.token, result: 'late' }, OPTIONS)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(release(store, { runId: 'r', key: 'k', token: first.token, error: 'x' }, OPTIONS)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(await store.countCommitted('r')).toBe(0);
    expect((await store.listClaims({ claimTtlMs: OPTIONS.claimTtlMs })).map((c) => c.token)).toEqual([second.token]);
    await commit(store, { runId: 'r', key: 'k', token: second.token, result: 'on time' }, OPTIONS);
    expect((await store.getCommitted('k'))?.resultJson).toBe('"on time"');
  });

  it('a committed key claimed with another fingerprint is IDEMPOTENCY_KEY_REUSE, recorded on the timeline', async () => {
    const first = await claim(store, { runId: 'r', key: 'k', fingerprint: 'a' }, OPTIONS);
    if (first.outcome !== 'claimed') throw new Error('expected claimed');
    await commit(store, { runId: 'r', key: 'k', token: first.token, result: 1, fingerprint: 'a' }, OPTIONS);
    await expect(claim(store, { runId: 'r', key: 'k', fingerprint: 'b' }, OPTIONS)).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSE' });
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
    await expect(listClaims(store, { cursor: 'bm90LWEtY3Vyc29y' }, OPTIONS.claimTtlMs)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
