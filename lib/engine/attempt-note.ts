/**
 * Which attempt of how many a failed attempt was, and when the next one is due (or why there is none). Stored
 * as data on the `failed` event (step_events.attempt, max_attempts, retry_at), written with the release the
 * failure costs anyway; read back by the run page ("attempt 3 of 10, next in 2.1 s, last error …"), the step
 * page and the CLI. Events written before those columns carried the same facts as a line under the error
 * (`attempt 3 of 10 · retry due <ISO>`): they are still read, from the text.
 */
import type { StepEvent } from '../store/contract';
import { takeoverDetail } from '../store/shared/claim-expiry-sql';

export interface AttemptNote {
  attempt: number;
  maxAttempts: number;
  /** Epoch ms the next attempt is due; null when the step gives up (see `gaveUp`). */
  retryAt: number | null;
  /** Why there is no next attempt: 'attempts spent', 'not retryable', 'NonRetryableError'. */
  gaveUp: string | null;
}

const NOTE = /\nattempt (\d+) of (\d+) · (?:retry due (\S+)|no retry: (.+))$/;

/** The note as one line, for the timeline and `waybill events`. */
export function formatAttemptNote(note: AttemptNote): string {
  const tail =
    note.retryAt !== null
      ? `retry due ${new Date(note.retryAt).toISOString()}`
      : `no retry: ${note.gaveUp ?? 'given up'}`;
  return `attempt ${note.attempt} of ${note.maxAttempts} · ${tail}`;
}

/** The error and the note of an older `failed` event's detail; note null for a detail without one. */
export function parseAttemptNote(detail: string | null): { error: string; note: AttemptNote | null } {
  const text = detail ?? '';
  const match = NOTE.exec(text);
  if (!match) return { error: text, note: null };
  const retryAt = match[3] ? Date.parse(match[3]) : Number.NaN;
  return {
    error: text.slice(0, match.index),
    note: {
      attempt: Number(match[1]),
      maxAttempts: Number(match[2]),
      retryAt: Number.isNaN(retryAt) ? null : retryAt,
      gaveUp: match[4] ?? null,
    },
  };
}

/**
 * A `failed` event's error and note: from its columns when it has them, else from its text (older rows). The
 * reason a step gave up is not stored: a NonRetryableError says so in its error's name, a last attempt is
 * `attempts spent`, anything else the policy refused to retry.
 */
export function attemptNoteOf(event: Pick<StepEvent, 'detail' | 'attempt' | 'maxAttempts' | 'retryAt'>): {
  error: string;
  note: AttemptNote | null;
} {
  if (event.attempt === null || event.maxAttempts === null) return parseAttemptNote(event.detail);
  const error = event.detail ?? '';
  const retryAt = event.retryAt === null ? null : event.retryAt * 1000;
  const gaveUp =
    retryAt !== null
      ? null
      : error.startsWith('NonRetryableError')
        ? 'NonRetryableError'
        : event.attempt >= event.maxAttempts
          ? 'attempts spent'
          : 'not retryable';
  return { error, note: { attempt: event.attempt, maxAttempts: event.maxAttempts, retryAt, gaveUp } };
}

/**
 * A takeover's two sides as one line: "lease of W1 (attempt 2) passed; taken over by W2 (attempt 3)", or "worker
 * W1 (attempt 2) was declared dead; taken over by …" when the store wrote that its holder died (takeoverDetail).
 */
export function takeoverText(
  event: Pick<StepEvent, 'detail' | 'workerId' | 'attempt' | 'previousWorkerId' | 'previousAttempt'>,
): string | null {
  if (event.previousAttempt === null) return null;
  const who = (worker: string | null) => worker ?? 'an outside client';
  const taker = `${who(event.workerId)}${event.attempt === null ? '' : ` (attempt ${event.attempt})`}`;
  const holder = `${who(event.previousWorkerId)} (attempt ${event.previousAttempt})`;
  const died = event.previousWorkerId !== null && event.detail === takeoverDetail(event.previousWorkerId, true);
  return died
    ? `worker ${holder} was declared dead; taken over by ${taker}`
    : `lease of ${holder} passed; taken over by ${taker}`;
}

/**
 * An event's detail as a reader sees it, made from its columns where it has them: a failed attempt's note below
 * its error, a takeover's two sides. Older rows read as they were written.
 */
export function eventText(
  event: Pick<
    StepEvent,
    'outcome' | 'detail' | 'workerId' | 'attempt' | 'maxAttempts' | 'retryAt' | 'previousWorkerId' | 'previousAttempt'
  >,
): string | null {
  if (event.outcome === 'expired') return takeoverText(event) ?? event.detail;
  if (event.outcome !== 'failed' || event.attempt === null || event.maxAttempts === null) return event.detail;
  const { error, note } = attemptNoteOf(event);
  return `${error}\n${formatAttemptNote(note!)}`;
}
