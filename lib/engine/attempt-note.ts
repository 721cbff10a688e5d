/**
 * The line a failed attempt's `failed` event carries under its error: which attempt of how many, and when the
 * next one is due (or why there is none). Written by the run context, read back by the run page, which turns
 * it into "attempt 3 of 10, next in 2.1 s, last error …". Plain text, so the timeline and `waybill events`
 * read it as it is.
 */
export interface AttemptNote {
  attempt: number;
  maxAttempts: number;
  /** Epoch ms the next attempt is due; null when the step gives up (see `gaveUp`). */
  retryAt: number | null;
  /** Why there is no next attempt: 'attempts spent', 'not retryable'. */
  gaveUp: string | null;
}

const NOTE = /\nattempt (\d+) of (\d+) · (?:retry due (\S+)|no retry: (.+))$/;

export function formatAttemptNote(note: AttemptNote): string {
  const tail =
    note.retryAt !== null
      ? `retry due ${new Date(note.retryAt).toISOString()}`
      : `no retry: ${note.gaveUp ?? 'given up'}`;
  return `\nattempt ${note.attempt} of ${note.maxAttempts} · ${tail}`;
}

/** The error and the note of a `failed` event's detail; note null for a detail without one (older events, outside clients). */
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
