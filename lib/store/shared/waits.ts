/** What both backends' waits (sqlite/waits.ts, postgres/waits.ts) say and read alike. */
import { WaitLimitError } from '../../errors';
import type { WaitKind } from '../contract';

/**
 * Open waits of waiting runs by kind: how many runs, and the oldest wait (its run and name) with its age. The
 * oldest is the first by creation time, then run id and name (bytewise on both: `collate` is PostgreSQL's
 * "C" or SQLite's BINARY), so both backends name the same run when two waits were made at one instant.
 */
export const WAITING_SUMMARY = (now: string, collate: string) => `WITH open AS (
    SELECT w.kind, w.run_id, w.name, w.created_at FROM waits w JOIN runs r ON r.id = w.run_id
    WHERE r.status = 'waiting' AND w.decided_at IS NULL),
  ranked AS (SELECT o.*, row_number() OVER (PARTITION BY o.kind
    ORDER BY o.created_at, o.run_id ${collate}, o.name ${collate}) AS place FROM open o)
  SELECT k.kind AS kind, (SELECT count(DISTINCT p.run_id) FROM open p WHERE p.kind = k.kind) AS runs,
    k.created_at AS "oldestAt", ${now} - k.created_at AS "ageSeconds", k.run_id AS "oldestRunId", k.name AS "oldestName"
  FROM ranked k WHERE k.place = 1 ORDER BY k.kind`;

/**
 * The most waits a run holds by default (WAYBILL_MAX_WAITS_PER_RUN): far more than a workflow asks for, few
 * enough that a run page listing them all stays small.
 */
export const MAX_WAITS_PER_RUN_DEFAULT = 500;

/** A signal sent ahead may add a wait only while its run holds fewer than `max` (WaitDecision.maxWaits). */
export function refuseOverLimit(runId: string, name: string, held: number, max: number): void {
  if (held >= max) throw new WaitLimitError(runId, name, max);
}

/** The timeline's line for a decision: "approval review approved by alice (operator): looks good". */
export function decisionDetail(
  kind: WaitKind,
  name: string,
  decisionJson: string,
  by: string,
  note?: string | null,
): string {
  const decision = JSON.parse(decisionJson) as { approved?: boolean; timedOut?: boolean };
  const what = decision.timedOut
    ? 'timed out'
    : kind === 'approval'
      ? decision.approved
        ? 'approved'
        : 'rejected'
      : kind === 'signal'
        ? 'signalled'
        : kind === 'event'
          ? 'received'
          : 'woke';
  return `${kind} ${name} ${what} by ${by}${note ? `: ${note}` : ''}`;
}
