/**
 * The reads of rewinding, written once for both backends as plans (rewind.ts says how they are driven): the
 * step page's record of one step, where a step name is in a run, a run's forks, and the trace's bars. Each is
 * a handful of indexed reads by (run, step) or by key, so a 100,000-step run costs what a short one does; no
 * transaction is needed.
 */

import type { StepRecord, TraceBar } from '../contract/rewind';
import type { CommittedRow, Dialect, StepEvent } from '../contract/rows';
import { committedOfRunAt } from './dialects';
import { type Plan, q } from './plan';

const str = (v: unknown) => (v === null || v === undefined ? null : String(v));
const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

function committedFromRow(r: Record<string, unknown>): CommittedRow {
  return {
    idemKey: String(r.idem_key),
    runId: String(r.run_id),
    resultJson: String(r.result_json),
    committedAt: Number(r.committed_at),
    step: num(r.step),
    fingerprint: str(r.fingerprint),
    workerId: str(r.worker_id),
    durationMs: num(r.duration_ms),
    source: r.source as CommittedRow['source'],
    forkedFrom: str(r.forked_from),
    inputJson: str(r.input_json),
    priorStep: num(r.prior_step),
    priorStateJson: str(r.prior_state_json),
  };
}

/** The step page's reads (contract/rewind.ts StepRecord): four indexed reads, no transaction needed. */
export function* readStepPlan(d: Dialect, runId: string, step: number, limit: number): Plan<StepRecord> {
  const rows = committedOfRunAt(d, runId);
  const committed = (yield q(
    `SELECT * FROM committed WHERE ${rows.sql} AND step = ? ORDER BY idem_key LIMIT 1`,
    ...rows.params,
    step,
  ))[0];
  const history = yield q(
    `SELECT * FROM committed_history WHERE run_id = ? AND step = ? ORDER BY id LIMIT ?`,
    runId,
    step,
    limit,
  );
  const events = yield q(
    `SELECT * FROM (SELECT id, run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at, attempt,
      max_attempts, retry_at, previous_worker_id, previous_attempt
    FROM step_events WHERE run_id = ? AND step = ? AND outcome NOT IN ('skipped', 'awaited') ORDER BY id DESC LIMIT ?) e ORDER BY id`,
    runId,
    step,
    limit,
  );
  const claim = (yield q(`SELECT * FROM claims WHERE run_id = ? AND step = ? LIMIT 1`, runId, step))[0];
  return {
    committed: committed ? committedFromRow(committed) : null,
    history: history.map((h) => ({
      ...committedFromRow(h),
      id: Number(h.id),
      supersededAt: Number(h.superseded_at),
      supersededBy: String(h.superseded_by),
      reason: str(h.reason),
      rerun: Number(h.rerun),
    })),
    events: events.map((e) => ({
      id: Number(e.id),
      runId: String(e.run_id),
      idemKey: str(e.idem_key),
      step: num(e.step),
      outcome: e.outcome as StepEvent['outcome'],
      count: Number(e.count),
      durationMs: num(e.duration_ms),
      workerId: str(e.worker_id),
      detail: str(e.detail),
      at: Number(e.at),
      attempt: num(e.attempt),
      maxAttempts: num(e.max_attempts),
      retryAt: num(e.retry_at),
      previousWorkerId: str(e.previous_worker_id),
      previousAttempt: num(e.previous_attempt),
    })),
    claim: claim
      ? {
          idemKey: String(claim.idem_key),
          runId: String(claim.run_id),
          claimedAt: Number(claim.claimed_at),
          token: str(claim.token),
          workerId: str(claim.worker_id),
          leaseExpiresAt: num(claim.lease_expires_at),
          heartbeatAt: num(claim.heartbeat_at),
          step: num(claim.step),
          attempt: Number(claim.attempt),
        }
      : null,
  };
}

/**
 * Where a step name (or a whole key) is in a run: the step numbers recorded under any of `keys` in committed,
 * committed_history and step_events (each read by an index on its key). `found` is false when no row has them.
 */
export function* stepOfKeysPlan(runId: string, keys: string[]): Plan<{ found: boolean; step: number | null }> {
  const marks = keys.map(() => '?').join(', ');
  const rows = yield q(
    `SELECT step FROM committed WHERE idem_key IN (${marks}) AND run_id = ?
    UNION ALL SELECT step FROM committed_history WHERE idem_key IN (${marks}) AND run_id = ?
    UNION ALL SELECT step FROM step_events WHERE idem_key IN (${marks}) AND run_id = ?`,
    ...keys,
    runId,
    ...keys,
    runId,
    ...keys,
    runId,
  );
  const steps = rows.map((r) => num(r.step)).filter((n): n is number => n !== null);
  return { found: rows.length > 0, step: steps.length > 0 ? Math.min(...steps) : null };
}

export function* forksPlan(runId: string): Plan<{ id: string; forkedAtStep: number | null; createdAt: number }[]> {
  const rows = yield q(
    'SELECT id, forked_at_step, created_at FROM runs WHERE forked_from_run = ? ORDER BY created_at, id LIMIT 20',
    runId,
  );
  return rows.map((r) => ({ id: String(r.id), forkedAtStep: num(r.forked_at_step), createdAt: Number(r.created_at) }));
}

/** The attempts of steps [from, from + count): committed rows and failure events, both read by (run, step) indexes. */
export function* tracePlan(d: Dialect, runId: string, from: number, count: number): Plan<TraceBar[]> {
  const to = from + count;
  const rows = committedOfRunAt(d, runId);
  const committed = yield q(
    `SELECT step, committed_at, duration_ms, worker_id FROM committed
    WHERE ${rows.sql} AND step >= ? AND step < ? ORDER BY step, idem_key LIMIT ?`,
    ...rows.params,
    from,
    to,
    count,
  );
  const failed = yield q(
    `SELECT step, outcome, at, duration_ms, worker_id FROM step_events
    WHERE run_id = ? AND step >= ? AND step < ? AND outcome IN ('failed', 'expired', 'lease_lost') ORDER BY id LIMIT ?`,
    runId,
    from,
    to,
    count * 20,
  );
  return [
    ...failed.map((e) => ({
      step: Number(e.step),
      outcome: e.outcome as TraceBar['outcome'],
      endAt: Number(e.at),
      durationMs: num(e.duration_ms),
      workerId: str(e.worker_id),
    })),
    ...committed.map((c) => ({
      step: Number(c.step),
      outcome: 'committed' as const,
      endAt: Number(c.committed_at),
      durationMs: num(c.duration_ms),
      workerId: str(c.worker_id),
    })),
  ];
}
