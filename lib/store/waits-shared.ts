/** What both backends' waits (sqlite/waits.ts, postgres/waits.ts) say and read alike. */
import { InvalidInputError } from '../errors';
import type { WaitKind, WaitRow } from './types';

/** Open waits of waiting runs by kind. */
export const WAITING_SUMMARY = (
  now: string,
) => `SELECT w.kind AS kind, count(DISTINCT w.run_id) AS runs, min(w.created_at) AS "oldestAt",
  ${now} - min(w.created_at) AS "ageSeconds"
  FROM waits w JOIN runs r ON r.id = w.run_id
  WHERE r.status = 'waiting' AND w.decided_at IS NULL GROUP BY w.kind ORDER BY w.kind`;

export function kindMismatch(wait: WaitRow, kind: WaitKind): InvalidInputError {
  return new InvalidInputError(`wait ${wait.name} of run ${wait.runId} is a ${wait.kind}, not a ${kind}`);
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
        : 'woke';
  return `${kind} ${name} ${what} by ${by}${note ? `: ${note}` : ''}`;
}
