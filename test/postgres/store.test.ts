/**
 * What only the PostgreSQL backend has to get right (the shared behaviour is in test/contract): migrating
 * under concurrent openers, adopting the article's tables, the database clock, which errors are retried,
 * and statements whose answer was lost with the connection. Each test has a schema of its own.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { LeaseLostError } from '../../lib/errors';
import type { ClaimRequest } from '../../lib/store/contract';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { openPostgresStore, type PostgresStore } from '../../lib/store/postgres';
import { postgresAvailable, startPgProxy, type TestSchema, testSchema, testUrl } from '../support/postgres';
import { until } from '../support/until';

const pgUp = await postgresAvailable('PostgreSQL store tests');

async function open(schema: TestSchema, options: { url?: string; clock?: ManualClock } = {}): Promise<PostgresStore> {
  const store = await openPostgresStore({
    url: options.url ?? testUrl(),
    schema: schema.name,
    clock: options.clock,
    poolSize: 3,
  });
  onTestFinished(() => store.close());
  return store;
}

function claimRequest(overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    idemKey: 'k',
    runId: 'run-1',
    token: randomUUID(),
    workerId: 'w1',
    step: 0,
    attempt: 1,
    leaseMs: 30_000,
    claimTtlMs: 30_000,
    ...overrides,
  };
}

const commitOf = (c: ClaimRequest, resultJson = '{"ok":true}') => ({
  idemKey: c.idemKey,
  token: c.token,
  runId: c.runId,
  resultJson,
  step: c.step,
  fingerprint: null,
  workerId: c.workerId,
  durationMs: 12.345678,
});

describe.skipIf(!pgUp)('postgres store', () => {
  it('concurrent openers of a fresh schema migrate it exactly once', async () => {
    const schema = await testSchema();
    const stores = await Promise.all(Array.from({ length: 6 }, () => open(schema)));
    expect(stores.map((s) => s.dialect)).toEqual(Array(6).fill('postgres'));
    const tags = migrationsOf('pg').map((m) => ({ tag: m.tag }));
    expect(await schema.admin.query(`SELECT tag FROM ${schema.t('waybill_migrations')} ORDER BY tag`)).toEqual(tags);
    const tables = await schema.admin.query<{ name: string }>(
      `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`,
      [schema.name],
    );
    expect(tables.map((r) => r.name)).toEqual([
      'audit',
      'claims',
      'committed',
      'committed_history',
      'earlier_starts',
      'events',
      'lone_runs',
      'metrics_tally',
      'model_call_chunks',
      'model_calls',
      'progress',
      'run_logs',
      'run_metadata',
      'run_tags',
      'runs',
      'schedules',
      'step_events',
      'step_streams',
      'waits',
      'waybill_functions',
      'waybill_migrations',
      'webhook_deliveries',
      'webhooks',
      'workers',
      'workflows',
    ]);
  });

  it('adopts a schema made by the article’s three CREATE TABLE statements, every row kept', async () => {
    const schema = await testSchema();
    const { admin, t } = schema;
    // The article's DDL with its types translated: TEXT, INTEGER, REAL as double precision.
    await admin.query(`CREATE SCHEMA "${schema.name}"`);
    await admin.query(`CREATE TABLE ${t('progress')} (run_id TEXT PRIMARY KEY, step INTEGER NOT NULL,
      state_json TEXT NOT NULL, updated_at double precision NOT NULL)`);
    await admin.query(`CREATE TABLE ${t('committed')} (idem_key TEXT PRIMARY KEY, run_id TEXT NOT NULL,
      result_json TEXT NOT NULL, committed_at double precision NOT NULL)`);
    await admin.query(`CREATE TABLE ${t('claims')} (idem_key TEXT PRIMARY KEY, run_id TEXT NOT NULL,
      claimed_at double precision NOT NULL)`);
    const past = Date.now() / 1000 - 3600;
    await admin.query(`INSERT INTO ${t('progress')} VALUES ('run-a', 2, '{"processed":2}', $1)`, [past]);
    await admin.query(
      `INSERT INTO ${t('committed')} VALUES ('run-a:step:0', 'run-a', '"r0"', $1), ('run-a:step:1', 'run-a', '"r1"', $1)`,
      [past],
    );
    // The article's worker died mid-step an hour ago: an orphaned claim with no lease column.
    await admin.query(`INSERT INTO ${t('claims')} VALUES ('run-a:step:2', 'run-a', $1)`, [past]);

    const store = await open(schema);
    expect(await store.loadProgress('run-a')).toEqual({
      runId: 'run-a',
      step: 2,
      stateJson: '{"processed":2}',
      updatedAt: past,
      executed: 0,
      skipped: 0,
      awaited: 0,
      saveMs: null,
      // The article's two rows, counted as they were copied in (migration 0034's triggers).
      committedCount: 2,
    });
    expect((await store.listCommitted('run-a')).map((r) => [r.idemKey, r.resultJson, r.source])).toEqual([
      ['run-a:step:0', '"r0"', 'executed'],
      ['run-a:step:1', '"r1"', 'executed'],
    ]);
    const [orphan] = await store.listClaims({ claimTtlMs: 30_000 });
    expect(orphan).toMatchObject({
      idemKey: 'run-a:step:2',
      token: null,
      leaseExpiresAt: null,
      attempt: 1,
      orphaned: true,
    });
    expect(
      await admin.count(
        `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name LIKE 'article_%'`,
        [schema.name],
      ),
    ).toBe(0);

    // Waybill takes the orphan over; the article's own statements still run on the adopted tables.
    const c = claimRequest({ idemKey: 'run-a:step:2', runId: 'run-a', step: 2 });
    expect(await store.claim(c)).toMatchObject({
      kind: 'claimed',
      attempt: 2,
      tookOverFrom: { token: null, orphaned: true },
    });
    await store.commit(commitOf(c));
    await admin.query(
      `INSERT INTO ${t('claims')} (idem_key, run_id, claimed_at) VALUES ('run-a:step:3', 'run-a', $1)`,
      [past],
    );
    await admin.query(
      `INSERT INTO ${t('committed')} (idem_key, run_id, result_json, committed_at) VALUES ('run-a:step:3', 'run-a', '"r3"', $1)`,
      [past],
    );
    await admin.query(`DELETE FROM ${t('claims')} WHERE idem_key = 'run-a:step:3'`);
    await admin.query(
      `INSERT INTO ${t('progress')} (run_id, step, state_json, updated_at) VALUES ('run-a', 4, '{}', $1)
      ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json, updated_at = excluded.updated_at`,
      [past],
    );
    // Rows the article wrote have no step column; they list before the steps Waybill committed.
    expect((await store.listCommitted('run-a')).map((r) => r.idemKey)).toEqual([
      'run-a:step:0',
      'run-a:step:1',
      'run-a:step:3',
      'run-a:step:2',
    ]);
    expect((await store.loadProgress('run-a'))?.step).toBe(4);
    expect((await store.listEvents('run-a')).map((e) => e.outcome)).toEqual(['expired']);
  });

  it('decides leases by the database clock; an injected clock only shifts it', async () => {
    const schema = await testSchema();
    const clock = new ManualClock();
    // A ManualClock stands still while real time passes, so it falls behind this host's clock by however long
    // the machine took to get here. Catching it up before each decision makes the shift known to within the
    // time the decision itself took, which the bounds below measure instead of guessing.
    const catchUp = () => {
      clock.advance(Math.max(0, Date.now() - clock.now()));
      return Date.now();
    };
    const moved = await open(schema, { clock });
    const plain = await open(schema);
    const first = claimRequest({ leaseMs: 60_000 });
    const claimedBy = Date.now();
    const claimed = await plain.claim(first);
    expect(claimed.kind).toBe('claimed');

    const now = await schema.admin.count('SELECT extract(epoch from now())::float8');
    if (claimed.kind !== 'claimed') throw new Error('unreachable');
    // The database's clock, not this process's: the lease ends a minute after the server's now().
    expect(claimed.leaseExpiresAt).toBeGreaterThan(claimedBy / 1000 + 60 - 1);
    expect(claimed.leaseExpiresAt).toBeLessThanOrEqual(now + 60);

    const caughtUp = catchUp();
    const held = await moved.claim(claimRequest({ workerId: 'w2' }));
    const answered = Date.now();
    expect(held).toMatchObject({ kind: 'held', holder: { token: first.token, orphaned: false } });
    if (held.kind !== 'held') throw new Error('unreachable');
    // The lease has run for at most (answered - claimedBy); the clock lagged by at most (answered - caughtUp).
    expect(held.msUntilExpiry).toBeGreaterThanOrEqual(60_000 - (answered - claimedBy) - 5);
    expect(held.msUntilExpiry).toBeLessThanOrEqual(60_000 + (answered - caughtUp) + 5);

    catchUp();
    clock.advance(61_000);
    expect(await moved.listClaims({ orphanedOnly: true, claimTtlMs: 30_000 })).toHaveLength(1);
    expect(await plain.listClaims({ orphanedOnly: true, claimTtlMs: 30_000 })).toHaveLength(0);
    const taken = await moved.claim(claimRequest({ workerId: 'w2' }));
    expect(taken).toMatchObject({ kind: 'claimed', attempt: 2, tookOverFrom: { token: first.token, orphaned: true } });
    await expect(plain.commit(commitOf(first))).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('re-checks a brand-new claim: a whole claim-execute-commit between its snapshot and its insert', async () => {
    const schema = await testSchema();
    const app = `waybill_verify_${randomUUID().slice(0, 8)}`;
    const store = await open(schema, { url: testUrl({ applicationName: app }) });
    const { admin, t } = schema; // the admin connection plays the other worker
    // The other worker's claim is in flight (uncommitted), so our claim statement, whose snapshot does not
    // show it, blocks on its key in the unique index...
    await admin.query('BEGIN');
    await admin.query(
      `INSERT INTO ${t('claims')} (idem_key, run_id, claimed_at, token) VALUES ('k', 'run-1', 0, 'theirs')`,
    );
    const ours = store.claim(claimRequest());
    await until(
      'our claim to wait on the lock',
      async () =>
        (await admin.count(
          `SELECT count(*) FROM pg_stat_activity
      WHERE application_name = $1 AND wait_event_type = 'Lock'`,
          [app],
        )) === 1,
    );
    // ...while it executes and commits: claim row gone, result in.
    await admin.query(`DELETE FROM ${t('claims')} WHERE idem_key = 'k'`);
    await admin.query(
      `INSERT INTO ${t('committed')} (idem_key, run_id, result_json, committed_at) VALUES ('k', 'run-1', '"theirs"', 0)`,
    );
    await admin.query('COMMIT');
    // Our insert then meets no conflict. Without the re-check we would run the side effect a second time.
    expect(await ours).toMatchObject({ kind: 'committed', row: { resultJson: '"theirs"' } });
    expect(await admin.count(`SELECT count(*) FROM ${t('claims')}`)).toBe(0);
  });

  it('surfaces a non-transient error at once, with its SQLSTATE', async () => {
    const schema = await testSchema();
    const store = await open(schema);
    await schema.admin.query(`DROP TABLE ${schema.t('claims')}`);
    const started = performance.now();
    await expect(store.claim(claimRequest())).rejects.toMatchObject({ code: '42P01' });
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('survives the server closing its idle connections', async () => {
    const schema = await testSchema();
    const app = `waybill_idle_${randomUUID().slice(0, 8)}`;
    const store = await open(schema, { url: testUrl({ applicationName: app }) });
    await Promise.all([1, 2, 3].map((i) => store.getCommitted(`k${i}`)));
    const killed = await schema.admin.count(
      `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) x`,
      [app],
    );
    expect(killed).toBeGreaterThan(0);
    await sleep(100); // the pool hears of it as an 'error' on an idle client, which must not crash us
    const c = claimRequest();
    expect((await store.claim(c)).kind).toBe('claimed');
    await store.commit(commitOf(c));
    expect((await store.getCommitted('k'))?.resultJson).toBe('{"ok":true}');
  });

  it('recognises its own commit whose answer was lost with the connection', async () => {
    const schema = await testSchema();
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await open(schema, { url: proxy.url });
    const c = claimRequest();
    await store.claim(c);
    proxy.loseAnswerTo('waybill_commit');
    await store.commit({
      ...commitOf(c),
      progress: { runId: 'run-1', step: 1, stateJson: '{}', executed: 1, skipped: 2, awaited: 0 },
    });
    expect(proxy.lost).toBe(1);
    expect(await schema.admin.count(`SELECT count(*) FROM ${schema.t('committed')}`)).toBe(1);
    expect(await schema.admin.count(`SELECT count(*) FROM ${schema.t('claims')}`)).toBe(0);
    // The landed attempt wrote the progress and its counters once; the retry wrote nothing.
    expect(await store.loadProgress('run-1')).toMatchObject({ step: 1, executed: 1, skipped: 2 });
    expect((await store.listEvents('run-1')).map((e) => e.outcome)).toEqual(['skipped']);
  });

  it('still reports a lost lease when a fenced commit’s answer is lost', async () => {
    const schema = await testSchema();
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await open(schema, { url: proxy.url });
    const mine = claimRequest({ leaseMs: 100 });
    await store.claim(mine);
    await sleep(200);
    const theirs = claimRequest({ workerId: 'w2' });
    expect((await store.claim(theirs)).kind).toBe('claimed');
    await store.commit(commitOf(theirs));
    proxy.loseAnswerTo('waybill_commit');
    // Same worker, run, step and result: only the duration tells our attempt from theirs.
    await expect(store.commit({ ...commitOf(mine), workerId: 'w2', durationMs: 1.5 })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    expect(proxy.lost).toBe(1);
    expect((await store.listEvents('run-1')).map((e) => e.outcome)).toEqual(['expired', 'lease_lost']);
  });

  it('recognises its own claim whose answer was lost with the connection', async () => {
    const schema = await testSchema();
    const proxy = await startPgProxy(testUrl());
    onTestFinished(() => proxy.close());
    const store = await open(schema, { url: proxy.url });
    const c = claimRequest();
    proxy.loseAnswerTo('waybill_claim');
    expect(await store.claim(c)).toMatchObject({ kind: 'claimed', attempt: 1, tookOverFrom: null });
    expect(proxy.lost).toBe(1);
    expect(await store.listClaims({ claimTtlMs: 30_000 })).toMatchObject([{ token: c.token, attempt: 1 }]);
    expect(await store.listEvents('run-1')).toEqual([]);
  });
});
