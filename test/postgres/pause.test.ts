/**
 * A worker is frozen with SIGSTOP inside its side effect, past its 300 ms lease. Another worker process
 * takes the claim over and commits. Then the frozen one is let go with SIGCONT: its commit must be refused
 * (LeaseLostError) and write nothing, because its fencing token is gone. Twenty trials, counted exactly.
 *
 * The side effect itself ran in both processes: that is the window no store can close, which is why the
 * idempotency key is handed to the side effect. What the store guarantees is one committed result.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { PgPauseArgs, PgPauseReport } from '../fixtures/pg-pause';
import { finish, spawnFixture } from '../support/child';
import { postgresAvailable, testSchema, testUrl } from '../support/postgres';

const TRIALS = 20;
const LEASE_MS = 300;
const pgUp = await postgresAvailable('PostgreSQL pause test');

describe.skipIf(!pgUp)('postgres: a worker paused past its lease', () => {
  it(`is fenced off after another process takes over and commits, ${TRIALS} trials out of ${TRIALS}`, async () => {
    const schema = await testSchema('wb_pause');
    const { admin, t } = schema;
    const args = { url: testUrl({ asyncCommit: true }), schema: schema.name, leaseMs: LEASE_MS };
    const paused = spawnFixture('pg-pause.ts', { ...args, workerId: 'paused', effectMs: 50 } satisfies PgPauseArgs);
    const taker = spawnFixture('pg-pause.ts', { ...args, workerId: 'taker', effectMs: 0 } satisfies PgPauseArgs);
    await Promise.all([paused.waitForLine(/^READY$/), taker.waitForLine(/^READY$/)]);

    for (let i = 0; i < TRIALS; i++) {
      paused.send(`RUN ${i}`);
      await paused.waitForLine(new RegExp(`^INSIDE ${i}$`), 10_000);
      paused.kill('SIGSTOP');
      // Past the lease by the database's clock; the taker waits out any remainder itself.
      await sleep(LEASE_MS + 50);
      taker.send(`RUN ${i}`);
      await taker.waitForLine(new RegExp(`^DONE ${i} executed$`), 10_000);
      paused.kill('SIGCONT');
      await paused.waitForLine(new RegExp(`^(LOST|DONE|FAILED) ${i}\\b`), 10_000);
    }
    paused.send('EXIT');
    taker.send('EXIT');
    const [p, k] = await Promise.all([finish<PgPauseReport>(paused), finish<PgPauseReport>(taker)]);

    expect(p).toEqual({ executions: TRIALS, done: 0, lost: TRIALS, failed: 0 });
    expect(k).toEqual({ executions: TRIALS, done: TRIALS, lost: 0, failed: 0 });
    expect(await admin.query(`SELECT worker_id, count(*)::int AS n FROM ${t('committed')} GROUP BY worker_id`)).toEqual(
      [{ worker_id: 'taker', n: TRIALS }],
    );
    expect(await admin.count(`SELECT count(*) FROM ${t('claims')}`)).toBe(0);
    const events = await admin.query<{ outcome: string; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM ${t('step_events')} GROUP BY outcome ORDER BY outcome`,
    );
    expect(events).toEqual([
      { outcome: 'expired', n: TRIALS },
      { outcome: 'lease_lost', n: TRIALS },
    ]);
  });
});
