/**
 * The protocol functions behind /api/v1/checkpoint on a real SQLite store (its clock moved by hand, so no
 * test waits for a lease): the same outcomes and errors as the in-process Checkpoint.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claim, commit, loadProgress, release, renew, saveProgress } from '../../lib/api/protocol';
import { ManualClock } from '../../lib/clock';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import { makeTempDir, type TempDir } from '../support/tmp';

const OPTIONS = { leaseMs: 1000, claimTtlMs: 1000 };
let dir: TempDir;
let clock: ManualClock;
let store: SqliteStore;

beforeEach(() => {
  dir = makeTempDir('waybill-api-');
  clock = new ManualClock();
  store = openSqliteStore({ path: dir.file('store.db'), clock, synchronous: 'normal' });
});

afterEach(async () => {
  await store.close();
  dir.remove();
});

const count = (sql: string, ...args: unknown[]) => (store.db.prepare(sql).get(...args) as { n: number }).n;

async function claimed(runId: string, key: string, extra: { fingerprint?: string; leaseMs?: number } = {}) {
  const got = await claim(store, { runId, key, ...extra }, OPTIONS);
  if (got.outcome !== 'claimed') throw new Error(`expected claimed, got ${got.outcome}`);
  return got;
}

describe('checkpoint protocol', () => {
  it('claim → commit → claim again returns the committed result', async () => {
    const first = await claimed('r1', 'r1:step:0', { fingerprint: 'f0' });
    expect(first).toMatchObject({ attempt: 1, tookOver: false });
    expect(first.token).toMatch(/^[0-9a-f-]{36}$/);
    await commit(
      store,
      {
        runId: 'r1',
        key: 'r1:step:0',
        token: first.token,
        result: { n: 1 },
        step: 0,
        fingerprint: 'f0',
        progress: { step: 1, state: { processed: 1 }, counters: { skipped: 2 } },
      },
      OPTIONS,
    );
    expect(await claim(store, { runId: 'r1', key: 'r1:step:0', fingerprint: 'f0' }, OPTIONS)).toMatchObject({
      outcome: 'committed',
      result: { n: 1 },
      source: 'executed',
      step: 0,
    });
    // The commit counted itself as executed and carried the client's two skips, in the same transaction.
    expect(await loadProgress(store, 'r1')).toMatchObject({
      step: 1,
      state: { processed: 1 },
      counters: { executed: 1, skipped: 2, awaited: 0 },
    });
    expect(count('SELECT count(*) AS n FROM committed')).toBe(1);
    expect(count('SELECT count(*) AS n FROM claims')).toBe(0);
  });

  it('a second claimer is told the key is held, until the lease passes and it takes over', async () => {
    const first = await claimed('r1', 'k', { leaseMs: 1000 });
    clock.advance(400);
    const held = await claim(store, { runId: 'r1', key: 'k' }, OPTIONS);
    expect(held).toEqual({ outcome: 'held', key: 'k', leaseExpiresAt: first.leaseExpiresAt, retryAfterMs: 600 });
    clock.advance(600);
    const taken = await claimed('r1', 'k');
    expect([taken.attempt, taken.tookOver]).toEqual([2, true]);
    // The first holder was only slow: its commit is fenced off, and nothing is written.
    await expect(
      commit(store, { runId: 'r1', key: 'k', token: first.token, result: 'late' }, OPTIONS),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' });
    await expect(renew(store, { key: 'k', token: first.token }, OPTIONS)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(count('SELECT count(*) AS n FROM committed')).toBe(0);
    await commit(store, { runId: 'r1', key: 'k', token: taken.token, result: 'on time' }, OPTIONS);
    expect(count('SELECT count(*) AS n FROM committed WHERE result_json = \'"on time"\'')).toBe(1);
  });

  it('a wrong token commits nothing and leaves the claim with its holder', async () => {
    const held = await claimed('r1', 'k');
    await expect(
      commit(store, { runId: 'r1', key: 'k', token: 'not-the-token', result: 1 }, OPTIONS),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect(count('SELECT count(*) AS n FROM committed')).toBe(0);
    expect(count('SELECT count(*) AS n FROM claims WHERE token = ?', held.token)).toBe(1);
    expect(await renew(store, { key: 'k', token: held.token, leaseMs: 5000 }, OPTIONS)).toEqual({
      key: 'k',
      renewed: true,
      leaseMs: 5000,
    });
  });

  it('a committed key reused with another fingerprint is IDEMPOTENCY_KEY_REUSE, at claim and at commit', async () => {
    const first = await claimed('r1', 'k', { fingerprint: 'aaa' });
    await commit(store, { runId: 'r1', key: 'k', token: first.token, result: 1, fingerprint: 'aaa' }, OPTIONS);
    await expect(claim(store, { runId: 'r1', key: 'k', fingerprint: 'bbb' }, OPTIONS)).rejects.toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSE',
    });
    await expect(
      commit(store, { runId: 'r1', key: 'k', token: 'stale', result: 2, fingerprint: 'bbb' }, OPTIONS),
    ).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSE' });
    expect(count("SELECT count(*) AS n FROM step_events WHERE outcome = 'key_reuse'")).toBe(2);
    expect(count('SELECT count(*) AS n FROM committed')).toBe(1);
  });

  it('release frees the key for the next claim; a stale token releases nothing and records nothing', async () => {
    const held = await claimed('r1', 'k');
    await expect(release(store, { key: 'k', token: 'stale', error: 'boom' }, OPTIONS)).rejects.toMatchObject({
      code: 'LEASE_LOST',
    });
    expect(count("SELECT count(*) AS n FROM step_events WHERE outcome = 'failed'")).toBe(0);
    expect(await release(store, { key: 'k', token: held.token, error: 'HTTP 500 from the model' }, OPTIONS)).toEqual({
      key: 'k',
      released: true,
    });
    expect(
      count("SELECT count(*) AS n FROM step_events WHERE outcome = 'failed' AND detail = 'HTTP 500 from the model'"),
    ).toBe(1);
    expect((await claimed('r1', 'k')).attempt).toBe(1);
  });

  it('progress: 404 before the first save, then the saved step and state', async () => {
    await expect(loadProgress(store, 'r9')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'progress of run r9 not found',
    });
    expect(await saveProgress(store, 'r9', { step: 3, state: { cursor: 'abc' }, counters: { skipped: 3 } })).toEqual({
      runId: 'r9',
      step: 3,
      saved: true,
    });
    expect(await loadProgress(store, 'r9')).toMatchObject({
      runId: 'r9',
      step: 3,
      state: { cursor: 'abc' },
      counters: { executed: 0, skipped: 3, awaited: 0 },
    });
  });
});
