/**
 * A library loop's run on PostgreSQL: written once as the loop starts and once as it ends (see
 * sqlite/loop-runs.ts); each commit reads the run's status in its own statement (steps.ts).
 */
import { type SQL, sql } from 'drizzle-orm';
import { StoreUnavailableError } from '../../errors';
import type { LoopRunEnd, LoopRunStart, RunStatus } from '../contract';
import { runs } from '../schema/pg';
import { refuseBegin } from '../shared/loop-runs';
import { LOOP_RUN } from './columns';
import type { PgConnection } from './connection';
import { withRetry } from './retry';

type Found = { workflow: string; status: RunStatus; owner: string | null; leaseExpiresAt: number | null; now: number };

export async function beginLoopRun(c: PgConnection, r: LoopRunStart): Promise<{ status: RunStatus; created: boolean }> {
  // A row deleted between the insert that found it and the lock (pruned meanwhile) is created next round.
  for (let round = 1; round <= 3; round++) {
    // Retried whole on a transient error: a restart retried after a lost answer only counts one attempt more.
    const begun = await withRetry('begin loop run', () =>
      c.inTransaction(async (client) => {
        const created = await c.once(
          sql`INSERT INTO ${runs} (id, workflow, input_json, status, total_steps, owner, attempts,
          created_at, updated_at, started_at)
        SELECT ${r.runId}::text, ${r.workflow}::text, ${r.inputJson}::text, 'running', ${r.totalSteps}::int, ${r.owner}::text, 1,
          t.now, t.now, t.now FROM (SELECT ${c.now()} AS now) t
        ON CONFLICT (id) DO NOTHING RETURNING 1`,
          undefined,
          client,
        );
        if (created.rowCount === 1) return { status: 'running' as const, created: true };
        // Locked: a pause or a worker's claim waits for this transaction, and it for them.
        const row = (
          await c.once<Found>(
            sql`SELECT ${sql.raw(LOOP_RUN)}, ${c.now()} AS now
        FROM ${runs} WHERE ${runs.id} = ${r.runId} FOR UPDATE`,
            undefined,
            client,
          )
        ).rows[0];
        if (!row) return null;
        refuseBegin(r, row, row.now);
        if (row.status === 'paused' || row.status === 'cancelled') return { status: row.status, created: false };
        // No run lease: no worker takes a loop's run over.
        const input = sql`${r.inputJson}::text`;
        await c.once(
          sql`UPDATE ${runs} SET status = 'running', owner = ${r.owner}::text, lease_expires_at = NULL,
        attempts = attempts + 1, total_steps = coalesce(${r.totalSteps}::int, total_steps), error = NULL, output_json = NULL,
        finished_at = NULL, input_json = CASE WHEN ${input} = 'null' THEN input_json ELSE ${input} END,
        started_at = coalesce(started_at, ${c.now()}), updated_at = ${c.now()} WHERE ${runs.id} = ${r.runId}`,
          undefined,
          client,
        );
        return { status: 'running' as const, created: false };
      }),
    );
    if (begun) return begun;
  }
  throw new StoreUnavailableError(`run ${r.runId} kept vanishing while its loop started`, undefined);
}

/** The update each outcome makes, where the run is still this owner's; the status the run is left in is answered. */
function endUpdate(r: LoopRunEnd, now: SQL): SQL {
  const mine = sql`${runs.id} = ${r.runId} AND owner IS NOT DISTINCT FROM ${r.owner}::text`;
  switch (r.outcome) {
    // Paused while its last step ran, the run is still done, as the worker's finishRun judges.
    case 'completed':
      return sql`UPDATE ${runs} SET status = 'completed', error = NULL, output_json = ${r.outputJson ?? null}::text, owner = NULL,
        lease_expires_at = NULL, finished_at = ${now}, updated_at = ${now} WHERE ${mine} AND status IN ('running', 'paused')`;
    case 'failed':
      return sql`UPDATE ${runs} SET status = 'failed', error = ${r.error ?? 'failed'}::text, owner = NULL, lease_expires_at = NULL,
        finished_at = ${now}, updated_at = ${now} WHERE ${mine} AND status = 'running'`;
    case 'stopped':
      return sql`UPDATE ${runs} SET owner = NULL, updated_at = ${now} WHERE ${mine} AND status IN ('paused', 'cancelled')`;
  }
}

export async function endLoopRun(c: PgConnection, r: LoopRunEnd): Promise<RunStatus | null> {
  const { rows } = await c.query<{ status: RunStatus | null }>(sql`WITH t AS (SELECT ${c.now()} AS now),
    u AS (${endUpdate(r, sql`(SELECT now FROM t)`)} RETURNING runs.status)
    SELECT coalesce((SELECT status FROM u), (SELECT status FROM ${runs} WHERE ${runs.id} = ${r.runId})) AS status`);
  return rows[0]?.status ?? null;
}
