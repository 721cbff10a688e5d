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
 *
 * Steps without a number (a ctx.step without { step }, a child's start `child:<name>`, a race's answer) stand
 * where they ran (fromN): from N on when committed after the first step of N on was, else before N. A rerun moves
 * them with the numbered steps from N, and a fork copies the ones before N. Before, a rerun kept every one of them
 * and a fork copied none, so a rerun with an edited input kept a child started with the old one, and a fork from
 * after a child's start started it again.
 *
 * Children (lib/engine/children.ts). A rerun that moves a child's start lets the child go: it has ended (a child
 * still running is refused), and it is no longer the run's child (parent_run_id NULL, detached), so the step
 * starts a new one under a new id and the run's wait for the old one is history. A fork that copies a child's
 * start keeps the child: it copies its original's wait for it (decided, or open, which the child's end then
 * decides as it decides the original's: settleChild), so the fork waits on that run and never starts it again.
 *
 * Waits (lib/engine/waits.ts). A fork copies the history before N, and the decisions that history read are part of
 * it, as a Temporal reset keeps the signals received before its point: every other wait decided before N (an
 * approval, a signal, an event, a sleep that has ended) is copied with its decision, so the fork's replay finds it
 * decided and asks no one again. One still open, or decided from N on, is not: the fork asks for it again. Both
 * kinds are copied by one statement (copyWaits). A rerun leaves the run's waits as they are.
 */

import { RewindRefusedError } from '../../errors';
import type { CommittedRow, Dialect, RunRow } from '../contract/rows';
import { ENDED } from './children';
import { claimExpiresAtText } from './claim-expiry-sql';
import { committedOfRunAt } from './dialects';
import { foldPlan } from './metrics-fold';
import { type Plan, q, type Statement } from './plan';

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
  /**
   * Rerun: the children the steps it moved had started, let go (the steps start new ones). Fork: the children
   * the steps it copied had started, which the fork waits on as its original does.
   */
  children: string[];
}

/** The steps a rerun or fork from `fromStep` redoes, both ends included. */
export interface RewindSpan {
  fromStep: number;
  toStep: number;
}

/** A child run a rerun lets go: the step that started it (`child:<name>`), its id, and its row as it stands. */
export interface LetGoChild {
  step: string;
  runId: string;
  workflow: string;
  status: RunRow['status'];
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
  traceparent, cancelled_with`;

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
    cancelledWith: (r.cancelled_with as string | null) ?? null,
  };
}

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
    if (last >= 0)
      throw new RewindRefusedError('step', `fromStep ${fromStep} is beyond run ${runId}'s last step (${last})`);
    const counted = (yield q(
      `SELECT count(*) AS n, count(step) AS numbered FROM committed WHERE ${rows.sql}`,
      ...rows.params,
    ))[0];
    const committed = Number(counted?.n ?? 0);
    throw new RewindRefusedError(
      'step',
      committed > 0 && Number(counted?.numbered ?? 0) === 0
        ? noNumberedStep(run, committed)
        : `run ${runId} has no steps to go back to`,
    );
  }
  return { run, last };
}

/**
 * Why a run that did commit steps has none to rewind to: a fan-out parent written as the guide writes it (children
 * started, waited for, then `ctx.step('merge', …)`) numbers none of them. "No steps" would deny what the runs list
 * shows, so this counts them and says what does apply instead; rerun, fork and their previews all answer it.
 */
function noNumberedStep(run: RunRow, committed: number): string {
  const anew = `start a new run of ${run.workflow} with its input`;
  const again =
    run.status === 'failed' || run.status === 'cancelled'
      ? `retry it to go on where it stopped, or ${anew}`
      : run.status === 'paused'
        ? `resume it to go on, or ${anew}`
        : `${anew} to run it again`;
  const steps = `${committed} committed step${committed === 1 ? '' : 's'}`;
  return `run ${run.id} has ${steps} and none has a step number (ctx.step without { step }, a child's start, a race's answer), so no rerun or fork can start from one: ${again} (a step given { step: n } can be rerun from in later runs)`;
}

/** The span a rewind from N would redo, read and refused as the rewind itself does (for its cost preview). */
export function* rewindSpanPlan(d: Dialect, runId: string, fromStep: number): Plan<RewindSpan> {
  const { last } = yield* span(d, runId, fromStep, '');
  return { fromStep, toStep: last };
}

/**
 * The children a rerun from N would let go, read and refused as the rerun itself does (childrenToLetGo, with the
 * cut it makes: fromN), for its preview. The span, the status and the claims are not judged here.
 */
export function* rerunLetGoPlan(d: Dialect, runId: string, fromStep: number): Plan<LetGoChild[]> {
  return yield* childrenToLetGo(d, runId, yield* fromN(d, runId, fromStep), '');
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
  const from = yield* fromN(d, r.runId, r.fromStep);
  const letGo = yield* childrenToLetGo(d, r.runId, from, lock);
  yield q(
    `INSERT INTO committed_history (${MOVED_COLUMNS}, superseded_at, superseded_by, reason, rerun)
    SELECT ${MOVED_COLUMNS}, CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER) FROM committed WHERE ${rows.sql} AND ${from.sql} ORDER BY step, idem_key`,
    now,
    r.actor,
    r.reason,
    rerun,
    ...rows.params,
    ...from.params,
  );
  // The model calls of the steps redone go to history with their results (their rows stay, for the ledger):
  // a deliberate rerun asks the model again, where a retry of the same attempt is answered from the record.
  yield q(
    `UPDATE model_calls SET idem_key = NULL, retired_at = CAST(? AS DOUBLE PRECISION)
    WHERE run_id = ? AND idem_key IS NOT NULL
    AND (step >= ? OR idem_key IN (SELECT idem_key FROM committed WHERE ${rows.sql} AND ${from.sql}))`,
    now,
    r.runId,
    r.fromStep,
    ...rows.params,
    ...from.params,
  );
  // What the metrics tally has not counted of the rows leaving `committed` is added to it first (metrics-fold.ts).
  yield* foldPlan(d, { committed: q(`${rows.sql} AND ${from.sql}`, ...rows.params, ...from.params) });
  const moved = (yield q(
    `DELETE FROM committed WHERE ${rows.sql} AND ${from.sql} RETURNING 1 AS x`,
    ...rows.params,
    ...from.params,
  )).length;
  for (const child of letGo) {
    yield q(
      `UPDATE runs SET parent_run_id = NULL, detached = ${d === 'sqlite' ? '1' : 'true'}, updated_at = ? WHERE id = ?`,
      now,
      child.runId,
    );
    yield q(
      `INSERT INTO step_events (run_id, outcome, count, detail, at) VALUES (?, 'operator', 1, ?, ?)`,
      child.runId,
      `let go by rerun ${rerun} of its parent ${r.runId} (${child.step} moved to history): the rerun starts a child of its own`,
      now,
    );
  }
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
    output_json = NULL, started_at = NULL, finished_at = NULL, owner = NULL, lease_expires_at = NULL,
    cancelled_with = NULL, updated_at = ?
    ${edited ? ', total_steps = CAST(? AS INTEGER)' : ''} WHERE id = ?
    RETURNING ${RUN_COLUMNS}`,
    ...[r.inputJson, now, ...(edited ? [r.totalSteps ?? null] : []), r.runId],
  ))[0]!;
  yield q(
    `INSERT INTO step_events (run_id, step, outcome, count, detail, at) VALUES (?, ?, 'operator', 1, ?, ?)`,
    r.runId,
    r.fromStep,
    `rerun ${rerun} from step ${r.fromStep} by ${r.actor}: ${moved} results moved to history${r.inputJson === null ? '' : ', with edited input'}${stateNote(state, prior, r.fromStep)}${childrenNote('let go', letGo)}`,
    now,
  );
  return {
    run: runFromRow(row),
    moved,
    rerun,
    state,
    stateStep: state === 'restored' ? prior!.step : null,
    children: letGo.map((child) => child.runId),
  };
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
  const from = yield* fromN(d, r.runId, r.fromStep);
  // In the original's order, which on SQLite is also the copies' rowid order (fromN's order for a fork of the fork).
  const copied = (yield q(
    `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id,
      duration_ms, source, forked_from, input_json, prior_step, prior_state_json)
    SELECT CAST(? AS TEXT) || substr(idem_key, length(CAST(? AS TEXT)) + 1), CAST(? AS TEXT), result_json, committed_at, step, fingerprint, worker_id, duration_ms,
      'forked', idem_key, input_json, prior_step, prior_state_json FROM committed WHERE ${rows.sql} AND ${from.before}
      ORDER BY ${d === 'sqlite' ? 'committed_at, rowid' : 'committed_at'} RETURNING 1 AS x`,
    r.newId,
    r.runId,
    r.newId,
    ...rows.params,
    ...from.beforeParams,
  )).length;
  const { kept, decided } = yield* copyWaits(d, r.runId, r.newId, from, now);
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
    `forked from run ${r.runId} at step ${r.fromStep} by ${r.actor}: ${copied} results copied${stateNote(state, prior, r.fromStep)}${childrenNote('kept', kept)}${decided === 0 ? '' : `; ${decided} decided ${decided === 1 ? 'wait' : 'waits'} copied`}`,
    now,
  );
  return {
    run: runFromRow(row),
    moved: copied,
    rerun: 0,
    state,
    stateStep: state === 'restored' ? prior!.step : null,
    children: kept.map((child) => child.runId),
  };
}

/**
 * Where a rewind from N cuts a run's history: the rows from N on, and the rows before N, as SQL on `committed`;
 * the waits decided before N, as SQL on `waits`.
 */
interface Cut {
  sql: string;
  params: unknown[];
  before: string;
  beforeParams: unknown[];
  decidedBefore: string;
  decidedBeforeParams: unknown[];
}

/**
 * A step without a number stands where it ran. Sequential code commits in order, so it is from N on when it was
 * committed after the first committed step of N on, and before N otherwise (every one of them before N when no
 * step of N on was committed: the run stopped before N). "After" is the commit order: on PostgreSQL the commit's
 * clock_timestamp() (microseconds; two rows of one run share one only when one batch committed both, side by
 * side), on SQLite the commit's time and then its rowid, since times there are milliseconds and two quick steps
 * share one. A fork's copies keep their original's times, and are inserted in its order.
 *
 * A wait stands where it was decided, by the same first commit of N on: before N when decided no later than it
 * (every decided one when no step of N on was committed). A run reads a wait before it starts the step after it,
 * so a decision in the instant of that step's commit (SQLite's milliseconds, a test's clock at rest) is one the
 * history before N read. Waits have no rowid in the commits' order to break that tie; the one taken wrongly by it
 * would be a wait the run had not reached, decided in that very instant by its own timeout or by a signal sent
 * ahead, which the fork finds decided as its original did. A fork's copies keep their original's times.
 */
function* fromN(d: Dialect, runId: string, fromStep: number): Plan<Cut> {
  const rows = committedOfRunAt(d, runId);
  const at = (yield q(
    `SELECT min(committed_at) AS at FROM committed WHERE ${rows.sql} AND step >= ?`,
    ...rows.params,
    fromStep,
  ))[0]?.at;
  if (at === null || at === undefined)
    return {
      sql: 'step >= ?',
      params: [fromStep],
      before: '(step < ? OR step IS NULL)',
      beforeParams: [fromStep],
      decidedBefore: 'decided_at IS NOT NULL',
      decidedBeforeParams: [],
    };
  const decided = { decidedBefore: 'decided_at <= CAST(? AS DOUBLE PRECISION)', decidedBeforeParams: [Number(at)] };
  if (d === 'postgres') {
    const after = 'committed_at >= CAST(? AS DOUBLE PRECISION)';
    return {
      sql: `(step >= ? OR (step IS NULL AND ${after}))`,
      params: [fromStep, Number(at)],
      before: `(step < ? OR (step IS NULL AND NOT ${after}))`,
      beforeParams: [fromStep, Number(at)],
      ...decided,
    };
  }
  const seq = (yield q(
    `SELECT min(rowid) AS seq FROM committed WHERE ${rows.sql} AND step >= ? AND committed_at = ?`,
    ...rows.params,
    fromStep,
    at,
  ))[0]!.seq;
  const after = '(committed_at, rowid) > (?, ?)';
  return {
    sql: `(step >= ? OR (step IS NULL AND ${after}))`,
    params: [fromStep, at, seq],
    before: `(step < ? OR (step IS NULL AND NOT ${after}))`,
    beforeParams: [fromStep, at, seq],
    ...decided,
  };
}

/** A child's start among a rewind's steps: the step's name (`child:<name>`) and the run it started. */
interface ChildStart {
  step: string;
  runId: string;
}

/** The children started by the run's steps that `where` (a Cut's half) takes: ctx.startChild's `child:` steps. */
function* childStarts(d: Dialect, runId: string, where: string, params: unknown[]): Plan<ChildStart[]> {
  const rows = committedOfRunAt(d, runId);
  const prefix = `${runId}:child:`;
  const found = yield q(
    `SELECT idem_key, result_json FROM committed WHERE ${rows.sql} AND step IS NULL AND ${where}
    AND substr(idem_key, 1, ?) = ? ORDER BY idem_key`,
    ...rows.params,
    ...params,
    prefix.length,
    prefix,
  );
  return found.flatMap((row) => {
    const started = JSON.parse(String(row.result_json)) as { runId?: unknown } | null;
    const child = typeof started?.runId === 'string' ? started.runId : null;
    return child === null ? [] : [{ step: String(row.idem_key).slice(runId.length + 1), runId: child }];
  });
}

/**
 * The rerun's children to let go, and its preview's (rerunLetGoPlan): those the steps it moves started and that
 * are still its own. Each must have ended: one still going would be left running with no parent, its end told to
 * no one. One pruned since is refused too: the step would start its id afresh, and the run's wait for it, decided
 * by the old one, would answer the new one.
 */
function* childrenToLetGo(d: Dialect, runId: string, from: Cut, lock: string): Plan<LetGoChild[]> {
  const letGo: LetGoChild[] = [];
  for (const child of yield* childStarts(d, runId, from.sql, from.params)) {
    const found = (yield q(`SELECT parent_run_id, workflow, status FROM runs WHERE id = ?${lock}`, child.runId))[0];
    if (!found) {
      throw new RewindRefusedError(
        'id-taken',
        `step ${child.step} started run ${child.runId}, which has been pruned: the rerun would start that id again and read the old run's answer for it; rerun from a step after it`,
      );
    }
    if (found.parent_run_id !== runId) continue;
    if (!(ENDED as readonly string[]).includes(String(found.status))) {
      throw new RewindRefusedError(
        'live-claims',
        `step ${child.step} started run ${child.runId}, which is ${String(found.status)}: a rerun from before it starts a new child, so cancel it or let it end first`,
      );
    }
    letGo.push({ ...child, workflow: String(found.workflow), status: found.status as RunRow['status'] });
  }
  return letGo;
}

/**
 * The waits the fork's copied history holds, copied with whatever their rows hold (decision, decider, note, times),
 * in one statement: its original's wait for each child the copied steps started (decided, or open: the child's end
 * decides the copies too, settleChild), and every other wait decided before N (fromN). A child the original had
 * not reached the wait for yet gets a new open one. On PostgreSQL each child's row is locked (FOR SHARE) first, so
 * its end, if it is ending now, commits before the copy is read, or finds the copy there. The children kept, and
 * how many decided waits of other kinds were copied.
 */
function* copyWaits(
  d: Dialect,
  runId: string,
  newId: string,
  from: Cut,
  now: number,
): Plan<{ kept: ChildStart[]; decided: number }> {
  const kept = yield* childStarts(d, runId, from.before, from.beforeParams);
  const alive = new Set<string>();
  for (const child of kept) {
    const found = yield q(`SELECT status FROM runs WHERE id = ?${d === 'postgres' ? ' FOR SHARE' : ''}`, child.runId);
    if (found.length > 0) alive.add(child.runId);
  }
  // A child's wait goes with its child's start; any other wait with its decision. A `<child>#n` wait (a parent's
  // read of its own child's end) is neither: a fork's child is its original's, whose ends the fork reads as they stand.
  const children = kept.length === 0 ? '1 = 0' : `name IN (${kept.map(() => '?').join(', ')})`;
  const copied = yield q(
    `INSERT INTO waits (run_id, name, kind, details_json, created_at, due_at, on_timeout, decided_at, decision_json, decided_by, note)
    SELECT CAST(? AS TEXT), name, kind, details_json, created_at, due_at, on_timeout, decided_at, decision_json, decided_by, note
    FROM waits WHERE run_id = ? AND CASE WHEN kind = 'child' THEN ${children} ELSE ${from.decidedBefore} END
    RETURNING kind, name`,
    newId,
    runId,
    ...kept.map((child) => child.runId),
    ...from.decidedBeforeParams,
  );
  const childWaits = new Set(copied.filter((row) => row.kind === 'child').map((row) => String(row.name)));
  for (const child of kept) {
    if (childWaits.has(child.runId)) continue;
    if (!alive.has(child.runId)) {
      throw new RewindRefusedError(
        'id-taken',
        `step ${child.step} started run ${child.runId}, which has been pruned before it ended: the fork could never learn how it ends; fork from a step before it`,
      );
    }
    yield q(
      `INSERT INTO waits (run_id, name, kind, created_at) VALUES (?, ?, 'child', ?) RETURNING 1 AS x`,
      newId,
      child.runId,
      now,
    );
  }
  return { kept, decided: copied.length - childWaits.size };
}

/** What the operator event says of the children a rewind let go or kept. */
function childrenNote(what: 'let go' | 'kept', children: ChildStart[]): string {
  if (children.length === 0) return '';
  return `; ${children.length === 1 ? 'child' : 'children'} ${what}: ${children.map((c) => `${c.runId} (${c.step})`).join(', ')}`;
}

/*
 * A child's ends, as its parent and its parent's forks see them. Both backends' settleChild (sqlite/waits.ts,
 * postgres/waits.ts) decide them with these names and lines; the engine (lib/engine/children.ts) records them.
 */

/**
 * The parent's wait for its child's next end, after the end it read: `<child id>#2`, `#3`… A run id never holds a
 * `#` (lib/domain/run-id), so no child's own wait is named so. The engine records one when it reads an end of the
 * child that did not complete, before it acts on it: the record of when the parent read that answer, and what it
 * parks on while an operator's retry of the child runs.
 */
export const nextEndName = (childId: string, n: number): string => `${childId}#${n}`;
/** Who decided a next-end wait the parent recorded as read: the parent itself, reading an end that had come. */
export const CHILD_READER = 'its parent, reading';

/** The timeline's line of such a read: "child crawl-7:c failed, read by this run (crawl-7:c#2)…". */
export function readDetail(name: string, decisionJson: string): string {
  const read = JSON.parse(decisionJson) as { runId: string; status: string };
  return `child ${read.runId} ${read.status}, read by this run (${name}): a later end of it takes its place until this run acts on it`;
}

/** What every nextEndName of the child begins with. */
export const nextEndPrefix = (childId: string): string => `${childId}#`;

/**
 * The runs forked from the run `?`, and theirs (a fork of a fork copies its original's waits too), through the
 * runs_forked index: a run without forks costs one probe of it.
 */
export const FORK_LINEAGE = `WITH RECURSIVE lineage(id) AS (SELECT id FROM runs WHERE forked_from_run = ?
  UNION SELECT r.id FROM runs r JOIN lineage l ON r.forked_from_run = l.id) SELECT id FROM lineage`;

/** The parent's line when a later end of its child takes the place of one it had not acted on. */
export function replacedDetail(child: Pick<RunRow, 'id' | 'status'>, was: { status: string }): string {
  return `child ${child.id} ${child.status}, in place of its earlier end (${was.status}), which this run had not acted on`;
}

/** The parent's line when it keeps the earlier end it acted on. */
export function keptDetail(child: Pick<RunRow, 'id' | 'status'>, was: { status: string }): string {
  return `child ${child.id} ${child.status} again; this run keeps its earlier end (${was.status}), which it acted on`;
}
