/**
 * Errors PostgreSQL raises for reasons of its own, which a retry survives: a statement cancelled
 * (pg_cancel_backend, statement_timeout: 57014) and a connection refused for want of slots (53300). Both
 * failed runs and left orphaned claims when they were treated as permanent. A cancelled statement may or may
 * not have run, so it is retried as a lost answer: each step must still be executed and committed once.
 *
 * Commits are slowed by a trigger (pg_sleep in a BEFORE INSERT on committed) so that a cancel can find one
 * running: the statement is the real one, it only takes longer.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { openPostgresStore } from '../../lib/store/postgres';
import { Admin, postgresAvailable, TEST_DATABASE_URL, type TestSchema, testSchema, testUrl } from '../support/postgres';
import { until } from '../support/until';

const pgUp = await postgresAvailable('PostgreSQL cancel and connection-limit tests');

/**
 * Every commit sleeps `seconds` (an expression of `attempt`, its number) inside its INSERT, after counting
 * itself in a sequence, which a cancel does not roll back: attempts less committed rows is how many commits
 * were cancelled.
 */
async function slowCommits(schema: TestSchema, seconds: string): Promise<() => Promise<number>> {
  await schema.admin.query(`CREATE SEQUENCE ${schema.t('commit_attempts')}`);
  await schema.admin.query(`CREATE FUNCTION ${schema.t('slow_commit')}() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE attempt bigint := nextval('${schema.name}.commit_attempts');
    BEGIN PERFORM pg_sleep(${seconds}); RETURN NEW; END $$`);
  await schema.admin.query(`CREATE TRIGGER slow_commit BEFORE INSERT ON ${schema.t('committed')}
    FOR EACH ROW EXECUTE FUNCTION ${schema.t('slow_commit')}()`);
  return async () =>
    (await schema.admin.count(`SELECT last_value FROM ${schema.t('commit_attempts')}`)) -
    (await schema.admin.count(`SELECT count(*) FROM ${schema.t('committed')}`));
}

/** runAgent over `steps` items on each run, at once, counting each item's executions. */
async function agents(store: Awaited<ReturnType<typeof openPostgresStore>>, runIds: string[], steps: number) {
  const executions = new Map<string, number>();
  const reports = await Promise.all(
    runIds.map((runId) =>
      runAgent(
        Array.from({ length: steps }, (_, i) => i),
        new Checkpoint(store, runId, { workerId: runId, leaseMs: 10_000 }),
        async (item, ctx) => {
          executions.set(ctx.idempotencyKey, (executions.get(ctx.idempotencyKey) ?? 0) + 1);
          await new Promise((resolve) => setImmediate(resolve));
          return { item };
        },
      ),
    ),
  );
  return { reports, executions: [...executions.values()] };
}

async function expectEachStepOnce(schema: TestSchema, runIds: string[], steps: number): Promise<void> {
  const { admin, t } = schema;
  expect(
    await admin.query(`SELECT run_id AS "runId", count(*)::int AS n, count(DISTINCT step)::int AS steps
    FROM ${t('committed')} GROUP BY run_id ORDER BY run_id`),
  ).toEqual(runIds.map((runId) => ({ runId, n: steps, steps })));
  expect(await admin.count(`SELECT count(*) FROM ${t('claims')}`)).toBe(0);
  // The counters ride in the commits: a commit applied twice would count its step twice.
  expect(await admin.query(`SELECT run_id AS "runId", executed FROM ${t('progress')} ORDER BY run_id`)).toEqual(
    runIds.map((runId) => ({ runId, executed: steps })),
  );
  expect(
    await admin.count(`SELECT count(*) FROM ${t('step_events')} WHERE outcome IN ('lease_lost', 'expired', 'failed')`),
  ).toBe(0);
}

describe.skipIf(!pgUp)('postgres: cancelled statements and refused connections are retried', () => {
  it('pg_cancel_backend on running commits: every run completes, every step executed and committed once', async () => {
    const schema = await testSchema('wb_cancel');
    const app = `waybill_cancel_${randomUUID().slice(0, 8)}`;
    const store = await openPostgresStore({
      url: testUrl({ applicationName: app, asyncCommit: true }),
      schema: schema.name,
      poolSize: 4,
    });
    onTestFinished(() => store.close());
    const cancelledCommits = await slowCommits(schema, '0.02');
    const runIds = ['cancel-a', 'cancel-b'];
    const STEPS = 80;

    let running = true;
    let cancelled = 0;
    const canceller = (async () => {
      while (running) {
        await sleep(60);
        // Only a commit that is running: the commit function's call in its text, and active.
        for (let spin = 0; spin < 40 && running; spin++) {
          const hit = await schema.admin.count(
            `SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity
            WHERE application_name = $1 AND state = 'active' AND query LIKE '%waybill_commit%'`,
            [app],
          );
          cancelled += hit;
          if (hit > 0) break;
        }
      }
    })();
    const { reports, executions } = await agents(store, runIds, STEPS).finally(() => (running = false));
    await canceller;

    const rolledBack = await cancelledCommits();
    console.log(
      `cancel: ${cancelled} cancels sent to running commits, ${rolledBack} commits cancelled, over ${runIds.length * STEPS} steps`,
    );
    expect(rolledBack).toBeGreaterThanOrEqual(10);
    expect(reports).toEqual(runIds.map(() => ({ processed: STEPS, executed: STEPS, skipped: 0, awaited: 0 })));
    expect(executions.length).toBe(runIds.length * STEPS);
    expect(executions.filter((n) => n !== 1)).toEqual([]);
    await expectEachStepOnce(schema, runIds, STEPS);
  });

  it('statement_timeout cancelling slow commits: every step executed and committed once', async () => {
    const schema = await testSchema('wb_timeout');
    await (await openPostgresStore({ url: testUrl(), schema: schema.name })).close();
    // A timeout no ordinary statement comes near, even on a loaded machine, and commits that pass it by far or
    // not at all: every first attempt sleeps a minute and is cancelled, and its retry runs at once. A timeout
    // of a few milliseconds made every statement a coin toss under load, and the test a race against its own
    // time limit.
    const url = new URL(testUrl());
    url.searchParams.set('options', '-c statement_timeout=1000');
    const store = await openPostgresStore({ url: url.toString(), schema: schema.name, poolSize: 4 });
    onTestFinished(() => store.close());
    const cancelledCommits = await slowCommits(schema, 'CASE WHEN attempt % 2 = 1 THEN 60 ELSE 0 END');
    const STEPS = 8;
    const { reports, executions } = await agents(store, ['timeout-a'], STEPS);

    expect(await cancelledCommits()).toBe(STEPS);
    expect(reports).toEqual([{ processed: STEPS, executed: STEPS, skipped: 0, awaited: 0 }]);
    expect(executions.filter((n) => n !== 1)).toEqual([]);
    expect(executions.length).toBe(STEPS);
    await expectEachStepOnce(schema, ['timeout-a'], STEPS);
  });

  it('a role limited to 2 connections under a pool of 6: refused connections are retried, every step once', async () => {
    const schema = await testSchema('wb_connlimit');
    const role = `wb_limited_${randomUUID().slice(0, 8)}`;
    await schema.admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 2`);
    await schema.admin.query(`CREATE SCHEMA "${schema.name}" AUTHORIZATION ${role}`);
    // CREATE SCHEMA IF NOT EXISTS (the store's open) asks for the privilege even when the schema is there.
    const [{ db }] = (await schema.admin.query<{ db: string }>('SELECT current_database() AS db')) as [{ db: string }];
    await schema.admin.query(`GRANT CREATE ON DATABASE "${db}" TO ${role}`);
    let store: Awaited<ReturnType<typeof openPostgresStore>> | undefined;
    onTestFinished(async () => {
      await store?.close();
      const admin = await Admin.connect();
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema.name}" CASCADE`);
        await admin.query(`DROP OWNED BY ${role}`);
        await admin.query(`DROP ROLE IF EXISTS ${role}`);
      } finally {
        await admin.end();
      }
    });
    const url = new URL(TEST_DATABASE_URL);
    url.username = role;
    // The limit bites: six connections at once as this role, and the server refuses the third.
    const probe = new pg.Pool({ connectionString: url.toString(), max: 6 });
    const attempts = await Promise.allSettled(Array.from({ length: 6 }, () => probe.query('SELECT pg_sleep(0.2)')));
    await probe.end();
    const refused = attempts.flatMap((a) => (a.status === 'rejected' ? [(a.reason as { code?: string }).code] : []));
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(new Set(refused)).toEqual(new Set(['53300']));
    // The probe's backends end after its pool does: until they have, they hold the role's slots, and the store
    // would be refused down to one connection instead of two.
    await until('the probe connections to be gone', async () => {
      const [row] = await schema.admin.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = $1',
        [role],
      );
      return row?.n === 0;
    });

    store = await openPostgresStore({ url: url.toString(), schema: schema.name, poolSize: 6 });
    const runIds = ['limit-a', 'limit-b', 'limit-c', 'limit-d'];
    const STEPS = 60;
    const { reports, executions } = await agents(store, runIds, STEPS);

    // The pool was refused a third connection and queued on the two it had.
    expect((store.pool as unknown as { options: { max: number } }).options.max).toBe(2);
    expect(reports).toEqual(runIds.map(() => ({ processed: STEPS, executed: STEPS, skipped: 0, awaited: 0 })));
    expect(executions.length).toBe(runIds.length * STEPS);
    expect(executions.filter((n) => n !== 1)).toEqual([]);
    await expectEachStepOnce(schema, runIds, STEPS);
  });
});
