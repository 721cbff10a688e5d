/**
 * Two `waybill worker` processes on a database that grants four connections, while the server terminates
 * their connections every 0.1–0.4 s for a minute: what a failover or a pooler's restart looks like. A client
 * the pool hands from one checkout to the next, or a session connection, can receive its FATAL (57P01) at any
 * moment; one without an 'error' listener then would kill the process. Both workers must be alive at the end,
 * every run completed, every step committed once and delivered once.
 *
 * The limit binds only a role that is not a superuser, so the test makes a role and a database of its own
 * (CREATE DATABASE … CONNECTION LIMIT 4) and drops both afterwards.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { runCli } from '../cli/support';
import { executionsByKey, startWorker, until } from '../engine/support';
import { Admin, postgresAvailable, TEST_DATABASE_URL } from '../support/postgres';
import { tempDir } from '../support/tmp';

const pgUp = await postgresAvailable('PostgreSQL connection-limit test');

const RUNS = 4;
const STEPS = 150;
const FAULT_MS = 60_000;

describe.skipIf(!pgUp)('postgres: workers under a connection limit while their connections are terminated', () => {
  it('keeps both workers alive for a minute of terminations at CONNECTION LIMIT 4: every run completed, every step once', async () => {
    const name = `wb_limit_${randomBytes(5).toString('hex')}`;
    const admin = await Admin.connect();
    await admin.query(`CREATE ROLE ${name} LOGIN`);
    await admin.query(`CREATE DATABASE ${name} OWNER ${name} CONNECTION LIMIT 4`);
    // DROP DATABASE waits for an immediate checkpoint, which fsyncs every file written since the last one: after a
    // suite's worth of schemas made and dropped that took 67 s (23,698 files) on a loaded machine, past the
    // 60 s a hook gets by default.
    onTestFinished(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`DROP ROLE IF EXISTS ${name}`);
      await admin.end();
    }, 300_000);
    const url = new URL(TEST_DATABASE_URL);
    url.username = name;
    url.pathname = `/${name}`;
    const target = { kind: 'postgres' as const, url: url.toString(), store: () => Promise.reject(new Error('unused')) };
    const data = tempDir('waybill-limit-');
    const env = {
      WAYBILL_DATA_DIR: data.path,
      WAYBILL_HEARTBEAT_MS: '200',
      WAYBILL_RUN_LEASE_MS: '5000',
      WAYBILL_LEASE_MS: '5000',
      WAYBILL_PG_POOL_SIZE: '4',
    };
    // The store is made first, as a deploy step would: `start`, like every command but worker, creates none.
    const migrated = await runCli(['migrate'], { env: { DATABASE_URL: target.url } });
    expect(migrated.code, migrated.stderr).toBe(0);
    for (let n = 0; n < RUNS; n++) {
      const started = await runCli(
        [
          'start',
          'notify',
          '--id',
          `limit-${n}`,
          '--input',
          JSON.stringify({ count: STEPS, outbox: 'outbox.jsonl', latencyMs: 100 }),
        ],
        { env: { DATABASE_URL: target.url } },
      );
      expect(started.code, started.stderr).toBe(0);
    }
    const workers = ['wa', 'wb'].map((id) => startWorker(target, ['--id', id, '--concurrency', '2'], env));

    // The terminations: every connection of the database but the one counting, every 0.1–0.4 s, for a minute.
    const killer = await Admin.connect();
    let terminated = 0;
    const stopAt = Date.now() + FAULT_MS;
    while (Date.now() < stopAt) {
      await sleep(100 + Math.random() * 300);
      terminated += await killer.count(
        `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
        WHERE datname = $1 AND pid <> pg_backend_pid()`,
        [name],
      );
    }
    await killer.end();

    // Once the database answers again, the workers finish the runs on the connections it grants. Read as the
    // superuser, whom the limit does not bind: the test takes none of the workers' four.
    const inside = new pg.Client({ connectionString: new URL(`/${name}`, TEST_DATABASE_URL).toString() });
    // DROP DATABASE … WITH (FORCE) ends this session if it is still open: heard, not thrown.
    inside.on('error', () => undefined);
    await inside.connect();
    onTestFinished(() => inside.end());
    const statuses = async () =>
      (await inside.query<{ status: string }>('SELECT status FROM waybill.runs ORDER BY id')).rows.map((r) => r.status);
    const exited = () => workers.find((w) => w.child.exitCode !== null || w.child.signalCode !== null);
    // What a stall left behind, in its error: each run's status, committed steps and open claims.
    const state = async () =>
      JSON.stringify(
        (
          await inside.query(
            `SELECT r.id, r.status, r.owner, (SELECT count(*)::int FROM waybill.committed c WHERE c.run_id = r.id)
              AS committed, (SELECT count(*)::int FROM waybill.claims k WHERE k.run_id = r.id) AS claims
            FROM waybill.runs r ORDER BY r.id`,
          )
        ).rows,
      );
    await until(
      'every run to complete',
      async () => {
        // A worker that died is the failure itself: said at once, with its last words, not after a long wait.
        const dead = exited();
        if (dead)
          throw new Error(
            `worker exited ${dead.child.exitCode}: ${dead.logs
              .slice(-40)
              .map((l) => JSON.stringify(l))
              .join('\n')}`,
          );
        return (await statuses()).every((status) => status === 'completed');
      },
      {
        // Bounded by a stall, not a total: on a busy machine the runs finish later, and a hang still fails.
        timeoutMs: 60_000,
        intervalMs: 250,
        progress: async () =>
          (await inside.query<{ n: number }>('SELECT count(*)::int AS n FROM waybill.committed')).rows[0]?.n ?? 0,
      },
    ).catch(async (error: Error) => {
      throw new Error(`${error.message}; runs: ${await state()}`);
    });

    console.log(`connection limit: ${terminated} connections terminated in ${FAULT_MS / 1000} s`);
    expect(terminated).toBeGreaterThan(100);
    expect(workers.map((w) => [w.child.exitCode, w.child.signalCode])).toEqual([
      [null, null],
      [null, null],
    ]);
    const committed = await inside.query<{ run: string; rows: number; steps: number }>(
      `SELECT run_id AS run, count(*)::int AS rows, count(DISTINCT step)::int AS steps FROM waybill.committed
      GROUP BY run_id ORDER BY run_id`,
    );
    expect(committed.rows).toEqual(
      Array.from({ length: RUNS }, (_, n) => ({ run: `limit-${n}`, rows: STEPS, steps: STEPS })),
    );
    const executions = executionsByKey(data.file('outbox.jsonl'));
    expect(executions.size).toBe(RUNS * STEPS);
    const repeated = [...executions].filter(([, count]) => count !== 1);
    // A side effect runs again only where its worker lost the commit's answer and the claim's lease then passed:
    // the receiver refused each as a duplicate. None is expected of a minute of terminations whose commits retry.
    expect(repeated).toEqual([]);
  }, 420_000);
});
