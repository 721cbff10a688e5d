/**
 * A library loop's run on PostgreSQL: written once as the loop starts and once as it ends (see
 * sqlite-loop-runs.ts); each commit reads the run's status in its own statement (COMMIT_SQL).
 */
import type pg from 'pg';
import { StoreUnavailableError } from '../errors';
import { withRetry } from './postgres-retry';
import { now } from './postgres-sql';
import { refuseBegin } from './loop-runs';
import type { LoopRunEnd, LoopRunStart, RunStatus } from './types';

type InTransaction = <T>(fn: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

/** $1 id, $2 workflow, $3 input, $4 total, $5 owner, $6 skew. Nothing returned: the row exists. */
const CREATE_SQL = `INSERT INTO runs (id, workflow, input_json, status, total_steps, owner, attempts, created_at, updated_at, started_at)
  SELECT $1, $2, $3, 'running', $4, $5, 1, t.now, t.now, t.now FROM (SELECT ${now('$6')} AS now) t
  ON CONFLICT (id) DO NOTHING RETURNING 1`;

/** $1 id, $2 skew. Locked: a pause or a worker's claim waits for this transaction, and it for them. */
const FOUND_SQL = `SELECT workflow, status, owner, lease_expires_at AS "leaseExpiresAt", ${now('$2')} AS now
  FROM runs WHERE id = $1 FOR UPDATE`;

/** $1 id, $2 input, $3 total, $4 owner, $5 skew. No run lease: no worker takes a loop's run over. */
const RESTART_SQL = `UPDATE runs SET status = 'running', owner = $4, lease_expires_at = NULL, attempts = attempts + 1,
  total_steps = coalesce($3::int, total_steps), error = NULL, output_json = NULL, finished_at = NULL,
  input_json = CASE WHEN $2::text = 'null' THEN input_json ELSE $2::text END,
  started_at = coalesce(started_at, ${now('$5')}), updated_at = ${now('$5')} WHERE id = $1`;

/** $1 id, $2 owner, then the outcome's own values, skew last. The status the run is left in is answered. */
const END_SQL: Record<LoopRunEnd['outcome'], string> = {
  // $3 output, $4 skew. Paused while its last step ran, the run is still done, as the worker's finishRun judges.
  completed: endSql(`UPDATE runs SET status = 'completed', error = NULL, output_json = $3, owner = NULL, lease_expires_at = NULL,
    finished_at = t.now, updated_at = t.now FROM (SELECT ${now('$4')} AS now) t
    WHERE id = $1 AND owner IS NOT DISTINCT FROM $2::text AND status IN ('running', 'paused')`),
  // $3 error, $4 skew.
  failed: endSql(`UPDATE runs SET status = 'failed', error = $3, owner = NULL, lease_expires_at = NULL,
    finished_at = t.now, updated_at = t.now FROM (SELECT ${now('$4')} AS now) t
    WHERE id = $1 AND owner IS NOT DISTINCT FROM $2::text AND status = 'running'`),
  // $3 skew.
  stopped: endSql(`UPDATE runs SET owner = NULL, updated_at = t.now FROM (SELECT ${now('$3')} AS now) t
    WHERE id = $1 AND owner IS NOT DISTINCT FROM $2::text AND status IN ('paused', 'cancelled')`),
};

function endSql(update: string): string {
  return `WITH u AS (${update} RETURNING runs.status)
  SELECT coalesce((SELECT status FROM u), (SELECT status FROM runs WHERE id = $1)) AS status`;
}

export async function beginLoopRun(inTransaction: InTransaction, r: LoopRunStart, skew: number): Promise<{ status: RunStatus; created: boolean }> {
  // A row deleted between the insert that found it and the lock (pruned meanwhile) is created next round.
  for (let round = 1; round <= 3; round++) {
    // Retried whole on a transient error: a restart retried after a lost answer only counts one attempt more.
    const begun = await withRetry('begin loop run', () => inTransaction(async (client) => {
      const created = await client.query(CREATE_SQL, [r.runId, r.workflow, r.inputJson, r.totalSteps, r.owner, skew]);
      if (created.rowCount === 1) return { status: 'running' as const, created: true };
      const row = (await client.query<{ workflow: string; status: RunStatus; owner: string | null; leaseExpiresAt: number | null; now: number }>(
        FOUND_SQL, [r.runId, skew])).rows[0];
      if (!row) return null;
      refuseBegin(r, row, row.now);
      if (row.status === 'paused' || row.status === 'cancelled') return { status: row.status, created: false };
      await client.query(RESTART_SQL, [r.runId, r.inputJson, r.totalSteps, r.owner, skew]);
      return { status: 'running' as const, created: false };
    }));
    if (begun) return begun;
  }
  throw new StoreUnavailableError(`run ${r.runId} kept vanishing while its loop started`, undefined);
}

export async function endLoopRun(pool: pg.Pool, r: LoopRunEnd, skew: number): Promise<RunStatus | null> {
  const own = r.outcome === 'completed' ? [r.outputJson ?? null] : r.outcome === 'failed' ? [r.error ?? 'failed'] : [];
  const { rows } = await withRetry('end loop run', () =>
    pool.query<{ status: RunStatus | null }>(END_SQL[r.outcome], [r.runId, r.owner, ...own, skew]));
  return rows[0]?.status ?? null;
}
