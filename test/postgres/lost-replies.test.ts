/**
 * Single protocol calls whose answer is lost on the way back (the statement ran and committed; the client
 * sees a dead connection and retries): the retry must not write what the first attempt already wrote.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { LeaseLostError } from '../../lib/errors';
import { openPostgresStore } from '../../lib/store/postgres';
import { postgresAvailable, startPgProxy, testSchema, testUrl } from '../support/postgres';

const pgUp = await postgresAvailable('PostgreSQL lost-reply tests');

describe.skipIf(!pgUp)('postgres: a lost answer, retried', () => {
  it('a failed step released twice (the first answer lost) records one failure and leaves no claim', async () => {
    const schema = await testSchema('wb_lost');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await openPostgresStore({ url: proxy.url, schema: schema.name, poolSize: 2 });
    onTestFinished(() => store.close());

    const token = randomUUID();
    const claim = {
      idemKey: 'k',
      runId: 'run',
      token,
      workerId: 'w1',
      step: 0,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 60_000,
    };
    expect(await store.claim(claim)).toMatchObject({ kind: 'claimed' });
    proxy.loseAnswerTo('waybill_release\0');
    await store.releaseClaim({
      idemKey: 'k',
      token,
      runId: 'run',
      step: 0,
      workerId: 'w1',
      durationMs: 3,
      error: 'HTTP 503 from the model',
    });

    expect(proxy.lost).toBe(1);
    expect(await store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);
    expect((await store.listEvents('run')).map((e) => [e.outcome, e.detail])).toEqual([
      ['failed', 'HTTP 503 from the model'],
    ]);
  });

  it('a refused commit whose lease_lost event lost its answer records the event once and still says the lease was lost', async () => {
    const schema = await testSchema('wb_lost');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await openPostgresStore({ url: proxy.url, schema: schema.name, poolSize: 2 });
    onTestFinished(() => store.close());

    const claim = (token: string) => ({
      idemKey: 'k',
      runId: 'run',
      token,
      workerId: token,
      step: 0,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 60_000,
    });
    expect(await store.claim(claim('w1'))).toMatchObject({ kind: 'claimed' });
    // w1's lease ends now and w2 takes the key over: w1's commit will be refused.
    expect(await store.renewClaim('k', 'w1', 0)).toBe(true);
    expect(await store.claim(claim('w2'))).toMatchObject({ kind: 'claimed', attempt: 2 });

    // The event's first send lands and its answer is lost; the retry must find it, not write a second.
    proxy.loseAnswerTo('waybill_event\0');
    const refused = store.commit({
      idemKey: 'k',
      token: 'w1',
      runId: 'run',
      resultJson: '"late"',
      step: 0,
      fingerprint: null,
      workerId: 'w1',
      durationMs: 12.345678,
    });
    await expect(refused).rejects.toBeInstanceOf(LeaseLostError);

    expect(proxy.lost).toBe(1);
    expect((await store.listEvents('run')).map((e) => [e.outcome, e.workerId])).toEqual([
      ['expired', 'w2'],
      ['lease_lost', 'w1'],
    ]);
    expect(await store.getCommitted('k')).toBeNull();
  });

  it("opens a worker's store whose schema lookup lost its connection, and refuses a read-only open at once", async () => {
    const schema = await testSchema('wb_lost');
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());

    // The first statement of an open: the connection dies as its answer comes back, as under pg_terminate_backend.
    proxy.loseAnswerTo('AS legacy');
    const store = await openPostgresStore({ url: proxy.url, schema: schema.name, poolSize: 2 });
    onTestFinished(() => store.close());
    expect(proxy.lost).toBe(1);
    expect(await store.listRuns({ limit: 1, claimTtlMs: 60_000 })).toEqual([]);

    // An operator's command opens without migrating and tries once: it says so rather than waiting.
    proxy.loseAnswerTo('AS legacy');
    await expect(openPostgresStore({ url: proxy.url, schema: schema.name, migrate: false })).rejects.toThrow(
      /Connection terminated/,
    );
    expect(proxy.lost).toBe(2);
  });
});
