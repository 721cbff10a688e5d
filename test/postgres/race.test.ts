/**
 * Four real processes race over the same 2,000 keys of one PostgreSQL schema. Every key must be committed
 * exactly once and its side effect run by exactly one process, never two at once.
 *
 * Concurrency is measured, not assumed away: each side effect raises a per-key in-flight counter in the
 * database at its start and lowers it at its end (keeping the highest value), and stamps an execution row
 * with the database's clock_timestamp() at both ends. Leases are 60 s, so no takeover is legitimate here:
 * every wait is for a live holder's commit.
 */
import { describe, expect, it } from 'vitest';
import { seededShuffle } from '../../lib/random';
import type { PgRaceArgs, PgRaceReport } from '../fixtures/pg-race';
import { finish, spawnFixture } from '../support/child';
import { postgresAvailable, testSchema, testUrl } from '../support/postgres';

const N = 2000;
const pgUp = await postgresAvailable('PostgreSQL race test');

/** A seeded permutation (lib/random.ts), so a failure can be replayed. */
const shuffled = seededShuffle;

describe.skipIf(!pgUp)('postgres: four processes racing over the same keys', () => {
  it('commits each of 2,000 keys once, executed by exactly one process, never two at once', async () => {
    const schema = await testSchema('wb_race');
    const { admin, t } = schema;
    await admin.query(`CREATE SCHEMA "${schema.name}"`);
    await admin.query(`CREATE TABLE ${t('race_inflight')} (key text PRIMARY KEY, inflight int NOT NULL,
      max_inflight int NOT NULL, executions int NOT NULL)`);
    await admin.query(`CREATE TABLE ${t('race_exec')} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      key text NOT NULL, worker text NOT NULL, started_at timestamptz NOT NULL, ended_at timestamptz)`);

    const keys = Array.from({ length: N }, (_, i) => `race:key:${i}`);
    // Two in the same order (they contend on every key), one backwards, one shuffled.
    const orders = [keys, keys, [...keys].reverse(), shuffled(keys, 7)];
    const children = orders.map((order, i) =>
      spawnFixture('pg-race.ts', {
        url: testUrl({ asyncCommit: true }),
        schema: schema.name,
        runId: 'race',
        workerId: `p${i}`,
        keys: order,
        leaseMs: 60_000,
        effectMs: 0,
      } satisfies PgRaceArgs),
    );
    await Promise.all(children.map((c) => c.waitForLine(/^READY$/)));
    for (const c of children) c.send('GO');
    const reports = await Promise.all(children.map((c) => finish<PgRaceReport>(c)));

    for (const r of reports) expect(r.executed + r.skipped + r.awaited).toBe(N);
    expect(reports.reduce((sum, r) => sum + r.executed, 0)).toBe(N);

    expect(await admin.count(`SELECT count(*) FROM ${t('committed')}`)).toBe(N);
    expect(
      await admin.count(`SELECT count(DISTINCT idem_key) FROM ${t('committed')} WHERE idem_key LIKE 'race:key:%'`),
    ).toBe(N);
    expect(await admin.count(`SELECT count(*) FROM ${t('claims')}`)).toBe(0);

    // The side effects: one execution per key, never two in flight, and no two intervals overlapping.
    expect(await admin.count(`SELECT count(*) FROM ${t('race_inflight')}`)).toBe(N);
    expect(await admin.count(`SELECT sum(executions) FROM ${t('race_inflight')}`)).toBe(N);
    expect(await admin.count(`SELECT max(executions) FROM ${t('race_inflight')}`)).toBe(1);
    expect(await admin.count(`SELECT max(max_inflight) FROM ${t('race_inflight')}`)).toBe(1);
    expect(await admin.count(`SELECT max(inflight) FROM ${t('race_inflight')}`)).toBe(0);
    expect(await admin.count(`SELECT count(*) FROM ${t('race_exec')} WHERE ended_at IS NULL`)).toBe(0);
    expect(
      await admin.count(`SELECT count(*) FROM ${t('race_exec')} a JOIN ${t('race_exec')} b
      ON a.key = b.key AND a.id < b.id AND a.started_at < b.ended_at AND b.started_at < a.ended_at`),
    ).toBe(0);

    // Whoever executed a key is whoever committed it, and each process's count matches its executions.
    expect(
      await admin.count(`SELECT count(*) FROM ${t('race_exec')} e JOIN ${t('committed')} c
      ON c.idem_key = e.key AND c.worker_id = e.worker`),
    ).toBe(N);
    const byWorker = await admin.query<{ worker: string; n: string }>(
      `SELECT worker, count(*) AS n FROM ${t('race_exec')} GROUP BY worker`,
    );
    const executedBy = Object.fromEntries(byWorker.map((r) => [r.worker, Number(r.n)]));
    for (const [i, r] of reports.entries()) expect(executedBy[`p${i}`] ?? 0).toBe(r.executed);

    // Nobody lost a lease or took one over: every wait was for a live holder's commit.
    expect(
      await admin.count(`SELECT count(*) FROM ${t('step_events')} WHERE outcome IN ('lease_lost', 'expired')`),
    ).toBe(0);
    console.log(`race: ${JSON.stringify(reports)}`);
  });
});
