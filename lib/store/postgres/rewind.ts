/**
 * Rerun and fork on PostgreSQL: the shared plans (../shared/rewind.ts) driven inside one BEGIN … COMMIT, the run row
 * locked FOR UPDATE first so a worker's claimRun or an operator's action waits for the rewind. Not retried on
 * a lost connection: the rollback leaves nothing done, and the caller sees the error and may ask again.
 */
import { sql } from 'drizzle-orm';
import type { RewindStore } from '../contract/rewind';
import type { Plan } from '../shared/plan';
import { forkPlan, type RewindOutcome, rerunLetGoPlan, rerunPlan, rewindSpanPlan } from '../shared/rewind';
import { forksPlan, readStepPlan, stepOfKeysPlan, tracePlan } from '../shared/step-reads';
import { fixedName, type PgConnection } from './connection';
import { drive, numbered } from './plan';
import { withRetry } from './retry';

export function postgresRewind(c: PgConnection): RewindStore {
  /**
   * A read plan, each statement on the pool and retried while transient; named by its text (connection.ts
   * fixedName) unless the plan's texts vary with its values (a list of keys).
   */
  async function read<T>(plan: Plan<T>, fixed = true): Promise<T> {
    let step = plan.next();
    while (!step.done) {
      const text = numbered(step.value.sql);
      const query = { name: fixed ? fixedName(text) : undefined, text, values: step.value.params };
      const { rows } = await withRetry('readStep', () => c.pool.query<Record<string, unknown>>(query));
      step = plan.next(rows);
    }
    return step.value;
  }
  const run = (make: (now: number) => Plan<RewindOutcome>) =>
    c.inTransaction(async (client) => {
      const now = Number((await client.query<{ now: number }>(c.text(sql`SELECT ${c.now()} AS now`))).rows[0]!.now);
      return drive(client, make(now));
    });
  return {
    async rerunRun(request) {
      return run((now) => rerunPlan('postgres', request, now, ' FOR UPDATE'));
    },
    async forkRun(request) {
      return run((now) => forkPlan('postgres', request, now, ''));
    },
    async rewindSpan(runId, fromStep) {
      return read(rewindSpanPlan('postgres', runId, fromStep));
    },
    async rerunLetGo(runId, fromStep) {
      return read(rerunLetGoPlan('postgres', runId, fromStep));
    },
    async readStep(runId, step, limit = 200) {
      return read(readStepPlan('postgres', runId, step, limit));
    },
    async readTrace(runId, from, count) {
      return read(tracePlan('postgres', runId, from, count));
    },
    async listForks(runId) {
      return read(forksPlan(runId));
    },
    async stepOfKeys(runId, keys) {
      return read(stepOfKeysPlan(runId, keys), false);
    },
  };
}
