/**
 * Rewinding a run, written once for both backends: rerun from a step (its committed results from step N on
 * MOVE to committed_history, the run is queued again at N) and fork from a step (a new run whose steps < N are
 * copied as committed). Each is one transaction of a handful of statements, decided between them; the plans
 * are generators that yield a statement (`?` placeholders) and are handed its rows, so SQLite drives one
 * synchronously inside BEGIN IMMEDIATE and PostgreSQL asynchronously inside BEGIN … COMMIT with the run row
 * locked FOR UPDATE. One text of the rules; two drivers of ten lines (sqlite/rewind.ts, postgres/rewind.ts).
 * The step page's reads are plans too, in step-reads.ts.
 *
 * Why a rerun needs no change to the step protocol: a claim checks `committed` for the key and a commit
 * inserts ON CONFLICT DO NOTHING. Once the old row has moved to history the key is simply not committed, so
 * the rerun's steps claim and commit the SAME keys (derived from what is processed, as always). The rerun
 * refuses while any claim of the run is live, and deletes the run's orphaned claims in its transaction: a
 * worker of the earlier execution that wakes up later holds no claim, so its commit is LeaseLostError, never
 * a second row. A worker killed mid-rerun is the ordinary case: its claim's lease passes, the next worker
 * takes it over (attempt + 1) and commits once; steps it committed stay committed and are skipped.
 *
 * The saved state. Each commit copies the run's progress as it stood (step and state, before the commit's own
 * write) into its row, prior_step/prior_state_json: one more pair of columns in the row the commit writes
 * anyway. A rerun or fork from N puts back the copy of the first row from N on (priorAt), so the loop resumes
 * with the state it had when it first reached N — not the latest, which would count steps N… twice.
 */

import { RewindRefusedError } from '../../errors';
import type { CommittedRow, Dialect, RunRow } from '../contract/rows';
import { claimExpiresAtText } from './claim-expiry-sql';
import { committedOfRunAt } from './dialects';

export type Statement = { sql: string; params: unknown[] };
/** A plan yields statements and is given each one's rows back; it returns its answer or throws a refusal. */
export type Plan<T> = Generator<Statement, T, Record<string, unknown>[]>;

export interface RerunRequest {
  runId: string;
  fromStep: number;
  /** The edited input (already validated by lib/control), or null to keep the run's. */
  inputJson: string | null;
  /** The edited input's step count (the catalog's check), written with it. */
  totalSteps?: number | null;
  actor: string;
  reason: string | null;
  claimTtlMs: number;
}

export interface ForkRequest {
  runId: string;
  fromStep: number;
  newId: string;
  inputJson: string | null;
  totalSteps?: number | null;
  actor: string;
  claimTtlMs: number;
}

export interface RewindOutcome {
  run: RunRow;
  /** Rerun: results moved to history. Fork: results copied. */
  moved: number;
  /** The run's rerun number (1 for its first); 0 for a fork. */
  rerun: number;
  /**
   * The run's saved state (progress): `restored` to what it was when step N was reached (`stateStep` is the
   * map's step then: N, or earlier for a loop whose map lags); `kept` as it was, none having been recorded at
   * N (a hand-made or older row, a state too long to copy); `none`: the run saves no progress.
   */
  state: 'restored' | 'kept' | 'none';
  stateStep: number | null;
}

/** The steps a rerun or fork from `fromStep` redoes, both ends included. */
export interface RewindSpan {
  fromStep: number;
  toStep: number;
}

export interface HistoryRow extends CommittedRow {
  id: number;
  supersededAt: number;
  supersededBy: string;
  reason: string | null;
  rerun: number;
}

const RUN_COLUMNS = `id, workflow, input_json, status, total_steps, owner, lease_expires_at, attempts, error, output_json,
  created_at, updated_at, started_at, finished_at, forked_from_run, forked_at_step, budget_usd, parent_run_id, detached, priority,
  traceparent`;

/** A runs row as read by either backend (snake_case: PostgreSQL folds unquoted aliases). */
export function runFromRow(r: Record<string, unknown>): RunRow {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    workflow: r.workflow as string,
    inputJson: r.input_json as string,
    status: r.status as RunRow['status'],
    totalSteps: num(r.total_steps),
    owner: (r.owner as string | null) ?? null,
    leaseExpiresAt: num(r.lease_expires_at),
    attempts: Number(r.attempts),
    error: (r.error as string | null) ?? null,
    outputJson: (r.output_json as string | null) ?? null,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    startedAt: num(r.started_at),
    finishedAt: num(r.finished_at),
    forkedFromRun: (r.forked_from_run as string | null) ?? null,
    forkedAtStep: num(r.forked_at_step),
    budgetUsd: num(r.budget_usd),
    parentRunId: (r.parent_run_id as string | null) ?? null,
    // SQLite has no boolean: 0/1 there, true/false on PostgreSQL.
    detached: Boolean(r.detached),
    priority: Number(r.priority),
    traceparent: (r.traceparent as string | null) ?? null,
  };
}

export const q = (sql: string, ...params: unknown[]): Statement => ({ sql, params });

/**
 * The steps a rerun or fork from N redoes: N through the run's last step (its total less one when it has a
 * total, else its highest committed step). Refused for a run with no row or N beyond the last step.
 */
function* span(d: Dialect, runId: string, fromStep: number, lock: string): Plan<{ run: RunRow; last: number }> {
  const found = (yield q(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = ?${lock}`, runId))[0];
  if (!found) {
    throw new RewindRefusedError(
      'no-run',
      `run ${runId} has no runs row: it is an outside client's run (or none), with no workflow to run it again`,
    );
  }
  const run = runFromRow(found);
  const rows = committedOfRunAt(d, runId);
  const max = (yield q(`SELECT max(step) AS last FROM committed WHERE ${rows.sql}`, ...rows.params))[0]?.last;
  const last = run.totalSteps !== null ? run.totalSteps - 1 : max === null || max === undefined ? -1 : Number(max);
  if (fromStep > last) {
    throw new RewindRefusedError(
      'step',
      last < 0
        ? `run ${runId} has no steps to go back to`
        : `fromStep ${fromStep} is beyond run ${runId}'s last step (${last})`,
    );
  }
  return { run, last };
}

/** The span a rewind from N would redo, read and refused as the rewind itself does (for its cost preview). */
export function* rewindSpanPlan(d: Dialect, runId: string, fromStep: number): Plan<RewindSpan> {
  const { last } = yield* span(d, runId, fromStep, '');
  return { fromStep, toStep: last };
}

/** Reads and checks what both rewinds need: the run, its last step, and that no claim of it is live. */
function* checked(
  d: Dialect,
  runId: string,
  fromStep: number,
  claimTtlMs: number,
  now: number,
  lock: string,
): Plan<{ run: RunRow; last: number }> {
  const { run, last } = yield* span(d, runId, fromStep, lock);
  const live = (yield q(
    `SELECT idem_key, worker_id FROM claims WHERE run_id = ?
    AND ${claimExpiresAtText('CAST(? AS DOUBLE PRECISION)')} > CAST(? AS DOUBLE PRECISION) LIMIT 1`,
    runId,
    claimTtlMs / 1000,
    now,
  ))[0];
  if (live) {
    throw new RewindRefusedError(
      'live-claims',
      `run ${runId} has a live claim on ${String(live.idem_key)} (held by ${String(live.worker_id ?? 'an outside client')}): wait for it to end or expire it first`,
    );
  }
  return { run, last };
}

export function* rerunPlan(d: Dialect, r: RerunRequest, now: number, lock: string): Plan<RewindOutcome> {
  const { run } = yield* checked(d, r.runId, r.fromStep, r.claimTtlMs, now, lock);
  if (!['completed', 'failed', 'cancelled', 'paused'].includes(run.status)) {
    throw new RewindRefusedError(
      'status',
      `cannot rerun run ${r.runId}: it is ${run.status}${run.status === 'running' ? ' (pause it first)' : ''}`,
    );
  }
  const rerun =
    Number(
      (yield q('SELECT coalesce(max(rerun), 0) AS n FROM committed_history WHERE run_id = ?', r.runId))[0]?.n ?? 0,
    ) + 1;
  // Read before the rows move: the map as it stood when step N was first reached in the execution that committed it.
  const prior = yield* priorAt(d, r.runId, r.fromStep);
  const rows = committedOfRunAt(d, r.runId);
  yield q(
    `INSERT INTO committed_history (${MOVED_COLUMNS}, superseded_at, superseded_by, reason, rerun)
    SELECT ${MOVED_COLUMNS}, CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER) FROM committed WHERE ${rows.sql} AND step >= ? ORDER BY step, idem_key`,
    now,
    r.actor,
    r.reason,
    rerun,
    ...rows.params,
    r.fromStep,
  );
  // The model calls of the steps redone go to history with their results (their rows stay, for the ledger):
  // a deliberate rerun asks the model again, where a retry of the same attempt is answered from the record.
  yield q(
    `UPDATE model_calls SET idem_key = NULL, retired_at = CAST(? AS DOUBLE PRECISION)
    WHERE run_id = ? AND idem_key IS NOT NULL
    AND (step >= ? OR idem_key IN (SELECT idem_key FROM committed WHERE ${rows.sql} AND step >= ?))`,
    now,
    r.runId,
    r.fromStep,
    ...rows.params,
    r.fromStep,
  );
  const moved = (yield q(
    `DELETE FROM committed WHERE ${rows.sql} AND step >= ? RETURNING 1 AS x`,
    ...rows.params,
    r.fromStep,
  )).length;
  // Every claim left is orphaned (checked above): gone, its holder can no longer commit into the rerun. Only
  // orphaned ones, judged again: under READ COMMITTED a claim taken since the check is live, and stays.
  yield q(
    `DELETE FROM claims WHERE run_id = ?
    AND ${claimExpiresAtText('CAST(? AS DOUBLE PRECISION)')} <= CAST(? AS DOUBLE PRECISION)`,
    r.runId,
    r.claimTtlMs / 1000,
    now,
  );
  const state = yield* restoreProgress(r.runId, r.fromStep, prior, now);
  const edited = r.inputJson !== null;
  const row = (yield q(
    `UPDATE runs SET status = 'queued', input_json = coalesce(CAST(? AS TEXT), input_json), error = NULL,
    output_json = NULL, finished_at = NULL, owner = NULL, lease_expires_at = NULL, updated_at = ?
    ${edited ? ', total_steps = CAST(? AS INTEGER)' : ''} WHERE id = ?
    RETURNING ${RUN_COLUMNS}`,
    ...[r.inputJson, now, ...(edited ? [r.totalSteps ?? null] : []), r.runId],
  ))[0]!;
  yield q(
    `INSERT INTO step_events (run_id, step, outcome, count, detail, at) VALUES (?, ?, 'operator', 1, ?, ?)`,
    r.runId,
    r.fromStep,
    `rerun ${rerun} from step ${r.fromStep} by ${r.actor}: ${moved} results moved to history${r.inputJson === null ? '' : ', with edited input'}${stateNote(state, prior, r.fromStep)}`,
    now,
  );
  return { run: runFromRow(row), moved, rerun, state, stateStep: state === 'restored' ? prior!.step : null };
}

/** The columns a committed row keeps when it moves to committed_history. */
const MOVED_COLUMNS =
  'idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id, duration_ms, source, forked_from, input_json, prior_step, prior_state_json';

/**
 * The map as it stood when step N was reached: the prior progress recorded by the first committed row from N
 * on (N's own, unless N has none), if that map had not passed N. A loop's state is only meaningful at the step
 * it was saved with, so both come back together: a map that lagged at k < N resumes at k, and steps k…N-1,
 * still committed, are skipped. Null when nothing usable was recorded.
 */
function* priorAt(d: Dialect, runId: string, fromStep: number): Plan<{ step: number; stateJson: string } | null> {
  const rows = committedOfRunAt(d, runId);
  const row = (yield q(
    `SELECT prior_step, prior_state_json FROM committed WHERE ${rows.sql} AND step >= ? ORDER BY step, committed_at, idem_key LIMIT 1`,
    ...rows.params,
    fromStep,
  ))[0];
  if (!row || row.prior_step === null || row.prior_state_json === null) return null;
  const step = Number(row.prior_step);
  return step > fromStep ? null : { step, stateJson: String(row.prior_state_json) };
}

/** Rerun: progress goes back to `prior` when recorded; otherwise its step back to N and its state as it is. */
function* restoreProgress(
  runId: string,
  fromStep: number,
  prior: { step: number; stateJson: string } | null,
  now: number,
): Plan<RewindOutcome['state']> {
  if (prior) {
    const hit = yield q(
      'UPDATE progress SET step = ?, state_json = ?, updated_at = ? WHERE run_id = ? RETURNING 1 AS x',
      prior.step,
      prior.stateJson,
      now,
      runId,
    );
    if (hit.length > 0) return 'restored';
  }
  yield q('UPDATE progress SET step = ?, updated_at = ? WHERE run_id = ? AND step > ?', fromStep, now, runId, fromStep);
  return (yield q('SELECT 1 AS x FROM progress WHERE run_id = ?', runId)).length > 0 ? 'kept' : 'none';
}

/** What the operator event says of the state. */
function stateNote(state: RewindOutcome['state'], prior: { step: number } | null, fromStep: number): string {
  if (state === 'restored') return `; state as it was at step ${prior!.step}`;
  if (state === 'kept') return `; state kept as it is (none recorded at step ${fromStep})`;
  return '';
}

export function* forkPlan(d: Dialect, r: ForkRequest, now: number, lock: string): Plan<RewindOutcome> {
  const { run } = yield* checked(d, r.runId, r.fromStep, r.claimTtlMs, now, lock);
  // Keys embed the run id (`<run>:step:<n>`, `<run>:<name>`): the fork's are the same with its own id. A key
  // that does not (a content hash) is global, so the fork would share it with the original: refused.
  const rows = committedOfRunAt(d, r.runId);
  const foreign = (yield q(
    `SELECT idem_key FROM committed WHERE ${rows.sql} AND substr(idem_key, 1, length(CAST(? AS TEXT))) <> CAST(? AS TEXT) LIMIT 1`,
    ...rows.params,
    `${r.runId}:`,
    `${r.runId}:`,
  ))[0];
  if (foreign) {
    throw new RewindRefusedError(
      'foreign-keys',
      `run ${r.runId}'s key ${JSON.stringify(foreign.idem_key)} does not embed the run id, so a fork would share it with the original: rerun the run instead`,
    );
  }
  if ((yield q('SELECT 1 AS x FROM runs WHERE id = ?', r.newId)).length > 0)
    throw new RewindRefusedError('id-taken', `run ${r.newId} already exists`);
  const row = (yield q(
    `INSERT INTO runs (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at,
      forked_from_run, forked_at_step)
    VALUES (?, ?, ?, 'queued', ?, 0, ?, ?, ?, ?) RETURNING ${RUN_COLUMNS}`,
    r.newId,
    run.workflow,
    r.inputJson ?? run.inputJson,
    r.inputJson === null ? run.totalSteps : (r.totalSteps ?? null),
    now,
    now,
    r.runId,
    r.fromStep,
  ))[0]!;
  // A fork carries the original's tags and metadata as they are now, as a replay does (Trigger.dev's): a filter by
  // customer finds both. The fork's own ctx.setTags calls then change its copy only.
  yield q(
    `INSERT INTO run_tags (run_id, tag) SELECT CAST(? AS TEXT), tag FROM run_tags WHERE run_id = ? RETURNING 1 AS x`,
    r.newId,
    r.runId,
  );
  yield q(
    `INSERT INTO run_metadata (run_id, key, value) SELECT CAST(? AS TEXT), key, value FROM run_metadata WHERE run_id = ?
    RETURNING 1 AS x`,
    r.newId,
    r.runId,
  );
  const prior = yield* priorAt(d, r.runId, r.fromStep);
  const copied = (yield q(
    `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id,
      duration_ms, source, forked_from, input_json, prior_step, prior_state_json)
    SELECT CAST(? AS TEXT) || substr(idem_key, length(CAST(? AS TEXT)) + 1), CAST(? AS TEXT), result_json, committed_at, step, fingerprint, worker_id, duration_ms,
      'forked', idem_key, input_json, prior_step, prior_state_json FROM committed WHERE ${rows.sql} AND step < ? RETURNING 1 AS x`,
    r.newId,
    r.runId,
    r.newId,
    ...rows.params,
    r.fromStep,
  )).length;
  // The fork starts from the original's map as it stood when N was reached (priorAt); where none was
  // recorded, at N with the original's latest state. A run that saves no progress gets none.
  const seeded = (yield q(
    `INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited)
    SELECT CAST(? AS TEXT), CAST(? AS INTEGER), coalesce(CAST(? AS TEXT), state_json), CAST(? AS DOUBLE PRECISION), 0, 0, 0
    FROM progress WHERE run_id = ? RETURNING 1 AS x`,
    r.newId,
    prior ? prior.step : r.fromStep,
    prior ? prior.stateJson : null,
    now,
    r.runId,
  )).length;
  const state: RewindOutcome['state'] = seeded === 0 ? 'none' : prior ? 'restored' : 'kept';
  yield q(
    `INSERT INTO step_events (run_id, step, outcome, count, detail, at) VALUES (?, ?, 'operator', 1, ?, ?)`,
    r.newId,
    r.fromStep,
    `forked from run ${r.runId} at step ${r.fromStep} by ${r.actor}: ${copied} results copied${stateNote(state, prior, r.fromStep)}`,
    now,
  );
  return { run: runFromRow(row), moved: copied, rerun: 0, state, stateStep: state === 'restored' ? prior!.step : null };
}
