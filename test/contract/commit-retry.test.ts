/**
 * A commit retried after an unanswered attempt, and a claim taken ahead that went stale, on every backend:
 * neither may run a side effect twice or report a landed commit as lost.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { AwaitTimeoutError, LeaseLostError, StoreUnavailableError } from '../../lib/errors';
import type { ClaimRequest, CommitRequest, Store } from '../../lib/store/contract';
import { type StoreHandle, stepBackends } from '../support/backends';
import { claimRequest, commitRequest } from '../support/requests';

const list = await stepBackends();

describe.each(list)('retried commits and stale claims ahead on $label', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  /** A commit with a result and a duration precise enough to be one call's own. */
  const commitResult = (c: ClaimRequest, over: Partial<CommitRequest> = {}): CommitRequest =>
    commitRequest(c, { resultJson: '{"sent":true}', durationMs: 12.345678, ...over });
  const events = async () => (await store.listEvents('run')).map((e) => e.outcome);
  /** The next call of `method` lands in the store and its answer is lost on the way back, as when a connection dies. */
  const loseFirstAnswer = (method: 'claim' | 'commit') => {
    const real = (store[method] as (r: never) => Promise<unknown>).bind(store);
    let lose = true;
    (store as unknown as Record<string, unknown>)[method] = async (r: never) => {
      const outcome = await real(r);
      if (!lose) return outcome;
      lose = false;
      throw new StoreUnavailableError(`connection lost after the ${method} was sent`, undefined);
    };
  };

  it('a commit retried with mayHaveLanded recognises its own landed row; anything else is still a lost lease', async () => {
    const c = claimRequest('k0');
    await store.claim(c);
    expect((await store.commit(commitResult(c))).next).toBeNull();
    // The same commit again, as after an attempt whose answer never came: it landed, so it succeeded.
    expect((await store.commit(commitResult(c, { mayHaveLanded: true }))).next).toBeNull();
    expect(await events()).toEqual([]);
    // Without the flag, or with another result or duration, the row is not this call's: refused, as ever.
    await expect(store.commit(commitResult(c))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(
      store.commit(commitResult(c, { mayHaveLanded: true, resultJson: '{"sent":false}' })),
    ).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.commit(commitResult(c, { mayHaveLanded: true, durationMs: 12.3 }))).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect(await events()).toEqual(['lease_lost', 'lease_lost', 'lease_lost']);
    const rows = await store.listCommitted('run');
    expect(rows.map((r) => [r.idemKey, r.resultJson])).toEqual([['k0', '{"sent":true}']]);
  });

  it('a claim taken ahead that went stale is claimed again, not trusted: its new holder keeps it, the step runs once', async () => {
    const leaseMs = 200;
    const a = new Checkpoint(store, 'run', {
      workerId: 'a',
      leaseMs,
      claimTtlMs: leaseMs,
      pollMs: { min: 5, max: 20 },
      clock: h.clock,
    });
    let executed = 0;
    await a.runOnce('k0', () => 'zero', { step: 0, next: { idemKey: 'k1', step: 1 } });
    // A stalls past its lease on k1 (taken in k0's commit), on the store's clock and its own; B takes k1 over
    // and is mid-step.
    await h.elapse(leaseMs * 4);
    const b = claimRequest('k1', { workerId: 'b', step: 1, attempt: 2, leaseMs: 60_000 });
    expect(await store.claim(b)).toMatchObject({ kind: 'claimed', tookOverFrom: { workerId: 'a' } });

    // A comes back to k1: its claim ahead is stale, so it asks again, finds B holding it, and waits.
    await expect(h.settle(a.runOnce('k1', () => ++executed, { step: 1, awaitTimeoutMs: 50 }))).rejects.toBeInstanceOf(
      AwaitTimeoutError,
    );
    expect(executed).toBe(0);
    expect((await store.commit(commitResult(b, { resultJson: '"from b"' }))).next).toBeNull();
    expect(await a.runOnce('k1', () => ++executed, { step: 1 })).toEqual({ result: 'from b', status: 'skipped' });
    expect(executed).toBe(0);
    expect(await events()).toEqual(['expired']);
  });

  it('a claim whose answer was lost is retried with its token: the retry runs the step, not waits a lease for itself', async () => {
    const a = new Checkpoint(store, 'run', { workerId: 'a', leaseMs: 60_000 });
    loseFirstAnswer('claim');
    let executed = 0;
    await expect(a.runOnce('k0', () => ++executed, { step: 0 })).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await a.runOnce('k0', () => ++executed, { step: 0, awaitTimeoutMs: 100 })).toEqual({
      result: 1,
      status: 'executed',
    });
    expect(executed).toBe(1);
    expect(await store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);
    expect(await events()).toEqual([]);
  });

  it('a commit whose answer was lost is retried and recognised as landed: executed once, no lease lost', async () => {
    const a = new Checkpoint(store, 'run', { workerId: 'a', leaseMs: 60_000 });
    loseFirstAnswer('commit');
    let executed = 0;
    expect(await a.runOnce('k0', () => ++executed, { step: 0 })).toEqual({ result: 1, status: 'executed' });
    expect(executed).toBe(1);
    expect((await store.listCommitted('run')).map((c) => [c.idemKey, c.resultJson, c.workerId])).toEqual([
      ['k0', '1', 'a'],
    ]);
    expect(await events()).toEqual([]);
  });

  it('a commit refused for four leases keeps its claim: the lease keeper renews it, a rival is held, the step runs once', async () => {
    // On PostgreSQL the lease keeper renews in real time (the database's clock counts): a 300 ms lease left a
    // loaded machine no room for a late renewal. Three seconds does, and SQLite's clock stands still anyway.
    const leaseMs = 3_000;
    const a = new Checkpoint(store, 'run', { workerId: 'a', leaseMs, claimTtlMs: leaseMs, clock: h.clock });
    const commit = store.commit.bind(store);
    let refusals = 0;
    let rival: Awaited<ReturnType<Store['claim']>> | undefined;
    store.commit = async (r) => {
      if (refusals < 12) {
        // A third of a lease passes per refusal, on the store's clock and the keeper's (one clock on SQLite).
        refusals++;
        await h.elapse(leaseMs / 3 + 20);
        if (refusals === 10)
          rival = await store.claim(claimRequest('k0', { workerId: 'rival', leaseMs, claimTtlMs: leaseMs }));
        throw new StoreUnavailableError('the store refuses writes', undefined);
      }
      return commit(r);
    };
    let executed = 0;
    expect(await h.settle(a.runOnce('k0', () => ++executed, { step: 0 }))).toEqual({ result: 1, status: 'executed' });
    expect(refusals).toBe(12);
    expect(rival).toMatchObject({ kind: 'held' });
    expect(executed).toBe(1);
    expect((await store.listCommitted('run')).map((c) => c.workerId)).toEqual(['a']);
    expect(await events()).toEqual([]);
  });

  /** Makes every insert into committed fail for good (a trigger, as a store that refuses the write would). */
  const refuseCommits = async () => {
    if (backend.name === 'sqlite') {
      await h.exec(
        `CREATE TRIGGER refuse_commit BEFORE INSERT ON committed BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
      );
    } else {
      await h.exec(`CREATE FUNCTION refuse_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
        CREATE TRIGGER refuse_commit BEFORE INSERT ON committed FOR EACH ROW EXECUTE FUNCTION refuse_commit()`);
    }
  };
  const acceptCommits = () => h.exec(`DROP TRIGGER refuse_commit${backend.name === 'sqlite' ? '' : ' ON committed'}`);

  it('a commit refused for good keeps its token and result: the retry commits them, the side effect runs once', async () => {
    const a = new Checkpoint(store, 'run', { workerId: 'a', leaseMs: 60_000 });
    await refuseCommits();
    let executed = 0;
    const send = () => ({ sent: ++executed });
    await expect(
      a.runOnce('k0', send, { step: 0, progress: { step: 1, state: {} }, next: { idemKey: 'k1', step: 1 } }),
    ).rejects.toThrow(/refused by the test/);
    expect(executed).toBe(1);
    // Still claimed under its token, as the store left it: the side effect ran, the result is not in.
    expect((await store.listClaims({ claimTtlMs: 60_000 })).map((c) => [c.idemKey, c.workerId])).toEqual([['k0', 'a']]);

    // The engine's retry of the step (RunContext calls runOnce again on the same Checkpoint) while the store
    // still refuses: the commit is tried again, the side effect is not.
    await expect(a.runOnce('k0', send, { step: 0 })).rejects.toThrow(/refused by the test/);
    expect(executed).toBe(1);

    await acceptCommits();
    expect(await a.runOnce('k0', send, { step: 0 })).toEqual({ result: { sent: 1 }, status: 'executed' });
    expect(executed).toBe(1);
    expect((await store.listCommitted('run')).map((c) => [c.idemKey, c.resultJson, c.workerId])).toEqual([
      ['k0', '{"sent":1}', 'a'],
    ]);
    // The call it was: its progress and its next key's claim went in with it.
    expect(await store.loadProgress('run')).toMatchObject({ step: 1, executed: 1 });
    expect((await store.listClaims({ claimTtlMs: 60_000 })).map((c) => c.idemKey)).toEqual(['k1']);
    expect(await a.runOnce('k1', send, { step: 1 })).toEqual({ result: { sent: 2 }, status: 'executed' });
    expect(await events()).toEqual([]);
  });

  it('a refused commit whose claim an operator expired meanwhile is not committed: the retry claims afresh', async () => {
    const a = new Checkpoint(store, 'run', { workerId: 'a', leaseMs: 60_000 });
    await refuseCommits();
    let executed = 0;
    await expect(a.runOnce('k0', () => ++executed, { step: 0 })).rejects.toThrow(/refused by the test/);
    await acceptCommits();
    expect(await store.expireClaim('k0', { actor: 'op', force: true, claimTtlMs: 60_000 })).toBe('expired');
    // The operator's expiry means "run it again": the kept result is not slipped in behind their back.
    expect(await a.runOnce('k0', () => ++executed, { step: 0 })).toEqual({ result: 2, status: 'executed' });
    expect(executed).toBe(2);
    expect(await events()).toEqual(['expired', 'lease_lost']);
  });

  it('a claim taken ahead and used at once is not asked for again', async () => {
    const a = new Checkpoint(store, 'run', { workerId: 'a', leaseMs: 60_000 });
    let claims = 0;
    const claim = store.claim.bind(store);
    store.claim = (r) => {
      claims++;
      return claim(r);
    };
    await a.runOnce('k0', () => 0, { step: 0, next: { idemKey: 'k1', step: 1 } });
    await a.runOnce('k1', () => 1, { step: 1 });
    expect(claims).toBe(1);
    expect((await store.listCommitted('run')).length).toBe(2);
  });
});
