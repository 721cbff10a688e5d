/**
 * A library loop's run on SQLite: the loop (a Checkpoint given a workflow, in the user's own process) writes
 * its runs row once as it starts and once as it ends; between the two, each commit reads the row's status in
 * its own transaction (steps.ts), which is how the loop learns of a pause or a cancel.
 */

import type { LoopRunEnd, LoopRunStart, RunStatus } from '../contract';
import { refuseBegin } from '../shared/loop-runs';
import { LOOP_RUN } from './columns';
import type { SqliteConnection } from './connection';

const FOUND = `SELECT ${LOOP_RUN} FROM runs WHERE id = ?`;

const CREATE = `INSERT INTO runs (id, workflow, input_json, status, total_steps, owner, attempts, created_at, updated_at, started_at)
  VALUES (@runId, @workflow, @inputJson, 'running', @totalSteps, @owner, 1, @now, @now, @now)`;

/** No run lease: the loop is its own executor, so no worker takes its run over when a lease passes. */
const RESTART = `UPDATE runs SET status = 'running', owner = @owner, lease_expires_at = NULL, attempts = attempts + 1,
  total_steps = coalesce(@totalSteps, total_steps), error = NULL, output_json = NULL, finished_at = NULL,
  input_json = CASE WHEN @inputJson = 'null' THEN input_json ELSE @inputJson END,
  started_at = coalesce(started_at, @now), updated_at = @now WHERE id = @runId`;

const END: Record<LoopRunEnd['outcome'], string> = {
  // Paused while its last step ran, the run is still done: the worker's finishRun judges it the same way.
  completed: `UPDATE runs SET status = 'completed', error = NULL, output_json = @outputJson, owner = NULL,
    lease_expires_at = NULL, finished_at = @now, updated_at = @now
    WHERE id = @runId AND owner IS @owner AND status IN ('running', 'paused')`,
  failed: `UPDATE runs SET status = 'failed', error = @error, owner = NULL, lease_expires_at = NULL,
    finished_at = @now, updated_at = @now WHERE id = @runId AND owner IS @owner AND status = 'running'`,
  stopped: `UPDATE runs SET owner = NULL, updated_at = @now
    WHERE id = @runId AND owner IS @owner AND status IN ('paused', 'cancelled')`,
};

type Found = { workflow: string; status: RunStatus; owner: string | null; leaseExpiresAt: number | null };

/** Inside the caller's transaction. */
export function beginLoopRunIn(
  c: SqliteConnection,
  r: LoopRunStart,
  now: number,
): { status: RunStatus; created: boolean } {
  const row = c.prepared<[string], Found>(FOUND).get(r.runId);
  if (!row) {
    c.prepared(CREATE).run({ ...r, now });
    return { status: 'running', created: true };
  }
  refuseBegin(r, row, now);
  if (row.status === 'paused' || row.status === 'cancelled') return { status: row.status, created: false };
  c.prepared(RESTART).run({ ...r, now });
  return { status: 'running', created: false };
}

export function endLoopRunIn(c: SqliteConnection, r: LoopRunEnd, now: number): RunStatus | null {
  c.prepared(END[r.outcome]).run({
    runId: r.runId,
    owner: r.owner,
    error: r.error ?? null,
    outputJson: r.outputJson ?? null,
    now,
  });
  return (
    c.prepared<[string], { status: RunStatus }>('SELECT status FROM runs WHERE id = ?').get(r.runId)?.status ?? null
  );
}
