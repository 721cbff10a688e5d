/**
 * The run page's "attempt 3 of 10, next in 2.1 s, last error …": the step the run is retrying, read from the
 * run's last `failed` event (its attempt, max_attempts and retry_at columns, or an older row's text:
 * lib/engine/attempt-note.ts) and its live claims. Pure, so the
 * rule is tested without a page: a step that has committed since, or a run that moved on to another key, or
 * one not running, has no step in flight to tell about.
 */
import { attemptNoteOf } from '../engine/attempt-note';
import type { ClaimRow, RunStatus, StepEvent } from '../store/contract';

export interface StepInFlight {
  key: string;
  step: number | null;
  /** The attempt that failed last, of how many the policy allows. */
  attempt: number;
  maxAttempts: number;
  /** Epoch ms the next attempt is due; null when it is running now (`running`) or there is none. */
  retryAt: number | null;
  /** The next attempt holds its claim now. */
  running: boolean;
  lastError: string;
}

export function stepInFlight(
  run: { status: RunStatus | 'idle' },
  lastFailed: StepEvent | null,
  claims: Pick<ClaimRow, 'idemKey'>[],
  committed: boolean,
): StepInFlight | null {
  if (run.status !== 'running' || !lastFailed?.idemKey || committed) return null;
  const { error, note } = attemptNoteOf(lastFailed);
  if (!note || note.retryAt === null) return null;
  const key = lastFailed.idemKey;
  // Claims of other keys only: the run is past this step (a later one failed with no note, or runs).
  if (claims.length > 0 && !claims.some((c) => c.idemKey === key)) return null;
  return {
    key,
    step: lastFailed.step,
    attempt: note.attempt,
    maxAttempts: note.maxAttempts,
    retryAt: note.retryAt,
    running: claims.some((c) => c.idemKey === key),
    lastError: error,
  };
}
