/**
 * A worker runs a 2,000-step runAgent in a child process while its connections keep dying. Every step must
 * still be committed once and every handler executed once.
 *
 * 1. The server kills every Waybill connection of the worker (pg_terminate_backend, found by
 *    application_name) every ~200 ms, waiting each time for one of its statements to be executing. The
 *    server rolls back a statement it is running when killed, so these are retries of statements that did
 *    not happen, and a pool that must not crash when its idle connections are closed under it.
 * 2. Every ~100 ms a proxy lets a commit reach the server and commit, then cuts the connection before the
 *    answer gets back, and then does the same to the claim that follows it: the outcome is unknown to the
 *    worker. A retried commit must recognise its own row, a retried claim its own token.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { PgAgentArgs, PgAgentReport } from '../fixtures/pg-agent';
import { finish, spawnFixture } from '../support/child';
import { postgresAvailable, startPgProxy, testSchema, testUrl } from '../support/postgres';

const STEPS = 2000;
const pgUp = await postgresAvailable('PostgreSQL connection-kill test');

describe.skipIf(!pgUp)('postgres: connections killed under a running agent', () => {
  it('completes a 2,000-step run with every step committed once while its connections die every 200 ms', async () => {
    const schema = await testSchema('wb_term');
    const { admin, t } = schema;
    const app = `waybill_term_${randomUUID().slice(0, 8)}`;
    const child = spawnFixture('pg-agent.ts', {
      url: testUrl({ applicationName: app, asyncCommit: true }),
      schema: schema.name,
      runId: 'agent-run',
      // 2 ms per step: with claim-ahead and asynchronous commit the bare run finishes in about a second, too
      // soon for a killer that strikes every 200 ms; this way it lasts at least 4 s on any machine.
      steps: STEPS,
      leaseMs: 5000,
      stepDelayMs: 2,
    } satisfies PgAgentArgs);
    await child.waitForLine(/^READY$/);
    child.send('GO');

    let running = true;
    let killed = 0;
    let midStatement = 0;
    let rounds = 0;
    let strikes = 0;
    // Each round, after 200 ms, waits (briefly) for one of the worker's statements to be executing and then
    // kills every one of its connections: most rounds land mid-statement, some mid-commit, where the
    // outcome is unknown to the worker.
    const killAll = async (onlyIfActive: boolean) =>
      (
        await admin.query<{ killed: number; active: number }>(
          `SELECT count(*)::int AS killed, (count(*) FILTER (WHERE state = 'active'))::int AS active
       FROM (SELECT state, pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = $1 AND pid <> pg_backend_pid()
           AND (NOT $2 OR EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'))) x`,
          [app, onlyIfActive],
        )
      )[0]!;
    const killer = (async () => {
      while (running) {
        await sleep(200);
        let round = { killed: 0, active: 0 };
        for (let spin = 0; spin < 50 && round.killed === 0 && running; spin++) round = await killAll(true);
        if (round.killed === 0 && running) round = await killAll(false);
        killed += round.killed;
        midStatement += round.active;
        if (round.killed > 0) strikes++;
        rounds++;
      }
    })();
    const report = await finish<PgAgentReport>(child).finally(() => (running = false));
    await killer;

    console.log(
      `terminate: ${killed} connections killed (${midStatement} mid-statement) in ${strikes} of ${rounds} rounds; ${JSON.stringify(report)}`,
    );
    // 2,000 steps of ≥ 2 ms is ≥ 4 s, so ≥ 20 rounds; a round finds nothing to kill only while the worker
    // waits out a retry's backoff.
    expect(strikes).toBeGreaterThanOrEqual(10);
    expect(report.agent).toEqual({ processed: STEPS, executed: STEPS, skipped: 0, awaited: 0 });
    expect(report.executions).toBe(STEPS);
    expect(report.repeated).toEqual([]);
    expect(await admin.count(`SELECT count(*) FROM ${t('committed')} WHERE run_id = 'agent-run'`)).toBe(STEPS);
    expect(await admin.count(`SELECT count(DISTINCT step) FROM ${t('committed')} WHERE run_id = 'agent-run'`)).toBe(
      STEPS,
    );
    expect(await admin.count(`SELECT count(*) FROM ${t('claims')}`)).toBe(0);
    // The counters ride in the commits: a commit applied twice would count its step twice.
    expect(await admin.query(`SELECT step, executed, skipped, awaited FROM ${t('progress')}`)).toEqual([
      { step: STEPS, executed: STEPS, skipped: 0, awaited: 0 },
    ]);
    expect(
      await admin.count(
        `SELECT count(*) FROM ${t('step_events')} WHERE outcome IN ('lease_lost', 'expired', 'failed')`,
      ),
    ).toBe(0);
  });

  it('completes a 2,000-step run with every step committed once while answers to claims and commits are lost', async () => {
    const schema = await testSchema('wb_lossy');
    const { admin, t } = schema;
    const proxy = await startPgProxy(testUrl({ asyncCommit: true }));
    onTestFinished(() => proxy.close());
    const child = spawnFixture('pg-agent.ts', {
      url: proxy.url,
      schema: schema.name,
      runId: 'agent-run',
      steps: STEPS,
      leaseMs: 5000,
      stepDelayMs: 1,
    } satisfies PgAgentArgs);
    await child.waitForLine(/^READY$/);
    child.send('GO');

    let running = true;
    const lostAfter = async (count: number) => {
      for (let waited = 0; running && proxy.lost <= count && waited < 2000; waited += 5) await sleep(5);
    };
    const saboteur = (async () => {
      while (running) {
        await sleep(100);
        // A commit whose answer is lost leaves the next step's claim (made in that commit) unknown, so the
        // worker claims it again on its own: that claim's answer is lost next. The names end in the NUL that
        // ends a statement name in Parse and Bind, so the commit's text (which calls waybill_claim) is no match.
        const before = proxy.lost;
        proxy.loseAnswerTo('waybill_commit\0');
        await lostAfter(before);
        proxy.loseAnswerTo('waybill_claim\0');
        await lostAfter(before + 1);
      }
    })();
    const report = await finish<PgAgentReport>(child).finally(() => (running = false));
    await saboteur;

    console.log(`lossy: ${proxy.lost} answers lost; ${JSON.stringify(report)}`);
    expect(proxy.lost).toBeGreaterThanOrEqual(10);
    expect(report.agent).toEqual({ processed: STEPS, executed: STEPS, skipped: 0, awaited: 0 });
    expect(report.executions).toBe(STEPS);
    expect(report.repeated).toEqual([]);
    expect(await admin.count(`SELECT count(*) FROM ${t('committed')} WHERE run_id = 'agent-run'`)).toBe(STEPS);
    expect(await admin.count(`SELECT count(*) FROM ${t('claims')}`)).toBe(0);
    expect(await admin.query(`SELECT step, executed, skipped, awaited FROM ${t('progress')}`)).toEqual([
      { step: STEPS, executed: STEPS, skipped: 0, awaited: 0 },
    ]);
    expect(await admin.count(`SELECT count(*) FROM ${t('step_events')}`)).toBe(0);
  });
});
