/**
 * Group commit under SIGKILL: one real `waybill worker --concurrency 64` on SQLite FULL, and on PostgreSQL, with
 * 64 notify runs in flight, so its claims and commits go to the file in batches, killed over and over at random points after
 * some progress and restarted each time, then left to finish. Counts come from the store and from the runs'
 * outboxes (the receiver's own record: a `duplicate` line is an execution it refused).
 *
 * What a kill may cost is bounded exactly: a step runs twice only when the kill landed between its delivery
 * and its batch's commit, and then the first delivery is a killed worker's and the step's claim was released
 * as in doubt (an `expired` event: the next worker saw the dead pid, or took the lease over).
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { stepKey } from '../../lib/checkpoint/keys';
import { readDeliveries, readOutbox } from '../../lib/engine/workflows/outbox';
import type { RunStore, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { testSchema } from '../support/postgres';
import { type TargetKind, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { startWorker, until, type WorkerProcess } from './support';

const kinds = await targetKinds('group commit under SIGKILL');

const RUNS = 64;
const STEPS = 30;
const KILLS = 30;

/** The database as the test reads it: plain SQL over its own connection, never through the worker's store. */
interface Reader {
  count(sql: string): Promise<number>;
  all<R>(sql: string): Promise<R[]>;
  close(): Promise<void>;
}

/** A store, a DATABASE_URL for the workers and a reader on one database: a SQLite file at FULL, or a schema. */
async function database(kind: TargetKind, dir: string) {
  if (kind === 'sqlite') {
    const url = `file:${dir}/store.db`;
    const store = await openStore(url, { synchronous: 'full' });
    const db = new Database(`${dir}/store.db`, { readonly: true });
    const reader: Reader = {
      count: async (sql) => (db.prepare(sql).get() as { n: number }).n,
      all: async <R>(sql: string) => db.prepare(sql).all() as R[],
      close: async () => {
        db.close();
      },
    };
    return { url, store, reader };
  }
  const schema = await testSchema('wb_gc_crash');
  const store = await openStore(schema.url);
  // The admin connection's search path is not the schema: each table is named through it.
  const named = (sql: string) =>
    sql.replace(/\b(FROM|JOIN) (committed|runs|claims|step_events)\b/g, (_, k, t) => `${k} ${schema.t(t)}`);
  const reader: Reader = {
    count: (sql) => schema.admin.count(named(sql)),
    all: <R>(sql: string) => schema.admin.query(named(sql)) as Promise<R[]>,
    close: async () => undefined,
  };
  return { url: schema.url, store, reader };
}

describe.each(kinds)('group commit under SIGKILL (%s)', (kind) => {
  it(`a --concurrency 64 worker with ${RUNS} runs in flight, killed ${KILLS} times: every step committed once, every delivery exact`, async () => {
    const data = tempDir('waybill-gc-crash-');
    const { url, store, reader } = await database(kind, data.path);
    const target = { kind, url, store: async () => store as Store & RunStore };
    try {
      for (let r = 0; r < RUNS; r++) {
        // A run's outbox of its own: the file lock then never makes runs wait for each other. Latencies of
        // 40-195 ms keep commits coming steadily rather than in waves, so a kill lands after a few of them.
        const input = { count: STEPS, outbox: `outboxes/r${r}.jsonl`, latencyMs: 40 + ((r * 37) % 32) * 5 };
        await store.createRun({ id: `r${r}`, workflow: 'notify', inputJson: JSON.stringify(input), totalSteps: STEPS });
      }
      const env = {
        WAYBILL_SQLITE_SYNC: 'full',
        WAYBILL_GROUP_COMMIT: 'on',
        WAYBILL_HEARTBEAT_MS: '100',
        WAYBILL_RUN_LEASE_MS: '5000',
        WAYBILL_LEASE_MS: '5000',
        WAYBILL_DATA_DIR: data.path,
      };
      const committedCount = () => reader.count('SELECT count(*) AS n FROM committed');

      const killed = new Set<string>();
      let worker: WorkerProcess & { id: string } = {
        id: 'gc-0',
        ...startWorker(target, ['--concurrency', '64', '--id', 'gc-0'], env),
      };
      while (killed.size < KILLS) {
        // Some progress first (a few commits by this worker), then a random moment: in a latency sleep, in a
        // delivery, between a delivery and its batch's commit, or inside the batch's transaction.
        const start = await committedCount();
        const wanted = 1 + Math.floor(Math.random() * 12);
        await until('progress', async () => (await committedCount()) >= Math.min(start + wanted, RUNS * STEPS), {
          timeoutMs: 60_000,
        });
        if ((await committedCount()) >= RUNS * STEPS) break;
        await sleep(Math.random() * 30);
        worker.child.kill('SIGKILL');
        await once(worker.child, 'exit');
        killed.add(worker.id);
        const id = `gc-${killed.size}`;
        worker = { id, ...startWorker(target, ['--concurrency', '64', '--id', id], env) };
      }
      await until(
        'every run to complete',
        async () => (await reader.count(`SELECT count(*) AS n FROM runs WHERE status = 'completed'`)) === RUNS,
        { timeoutMs: 120_000 },
      );
      worker.child.kill('SIGTERM');
      await once(worker.child, 'exit');

      expect(killed.size).toBe(KILLS);
      // Every step committed exactly once, by its run, and the map at the end of every run.
      const committed = await reader.all<{ key: string; runId: string; step: number; resultJson: string }>(
        'SELECT idem_key AS key, run_id AS "runId", step, result_json AS "resultJson" FROM committed',
      );
      expect(committed.length).toBe(RUNS * STEPS);
      const expectedKeys = Array.from({ length: RUNS }, (_, r) =>
        Array.from({ length: STEPS }, (_, s) => stepKey(`r${r}`, s)),
      ).flat();
      expect(new Set(committed.map((c) => c.key))).toEqual(new Set(expectedKeys));
      expect(await reader.count('SELECT count(*) AS n FROM claims')).toBe(0);
      for (let r = 0; r < RUNS; r++) expect((await store.loadProgress(`r${r}`))?.step).toBe(STEPS);

      // Every delivery exact: one `delivered` line per step in its run's outbox, and a committed result that is
      // the outbox's last word on its key (the execution that committed is the one the receiver saw last).
      const doubted = new Set(
        (
          await reader.all<{ key: string }>(
            `SELECT DISTINCT idem_key AS key FROM step_events WHERE outcome = 'expired'`,
          )
        ).map((e) => e.key),
      );
      let duplicates = 0;
      const byKey = new Map(
        committed.map((c) => [c.key, JSON.parse(c.resultJson) as { worker: string; status: string }]),
      );
      for (let r = 0; r < RUNS; r++) {
        const mail = readOutbox(data.file(`outboxes/r${r}.jsonl`));
        expect(mail.delivered).toBe(STEPS);
        expect(mail.byKey.size).toBe(STEPS);
        expect([...mail.byKey.values()].every((n) => n === 1)).toBe(true);
        duplicates += mail.duplicates;
        const lines = readDeliveries(data.file(`outboxes/r${r}.jsonl`));
        for (let s = 0; s < STEPS; s++) {
          const key = stepKey(`r${r}`, s);
          const executions = lines.filter((l) => l.key === key);
          expect(executions.length).toBeGreaterThanOrEqual(1);
          const last = executions.at(-1)!;
          expect(byKey.get(key)).toMatchObject({ worker: last.worker, status: last.status });
          if (executions.length > 1) {
            // Run again only after a kill between its delivery and its commit: every earlier execution was a
            // killed worker's, and the claim it left was reported in doubt before the step ran again.
            for (const earlier of executions.slice(0, -1)) expect(killed.has(earlier.worker!)).toBe(true);
            expect(doubted.has(key)).toBe(true);
          }
        }
      }
      // At most one step in doubt per run in flight at each kill.
      expect(duplicates).toBeLessThanOrEqual(KILLS * RUNS);
      // How much company the commits found, for the log only: how many commits meet in a batch depends on the
      // machine's speed, which no assertion here may. On SQLite the rows of one batch share its committed_at;
      // PostgreSQL dates each commit by its own clock_timestamp(), so there only the kills are told.
      const company =
        kind === 'sqlite'
          ? ` in ${await reader.count('SELECT count(DISTINCT committed_at) AS n FROM committed')} batches`
          : '';
      console.info(
        `${kind}: ${committed.length} commits${company}; ${duplicates} steps run twice after ${KILLS} kills`,
      );
    } finally {
      await reader.close();
      await store.close();
    }
    // 31 worker processes on 2 shared cores: the limit only stops a hang; the counts decide the test.
  }, 240_000);
});
