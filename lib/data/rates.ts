/**
 * The rates and times the pages show, as plain functions of what the store returned, so each can be checked
 * against a known history. Each says over which window it is measured, because a rate over a window the
 * work did not fill (an hour, for a run that ran one minute) is the wrong number.
 */
import type { StepTiming } from '../store/contract';

/** The runs page's throughput: steps committed over the last minute, which is a per-minute rate as it is. */
export const THROUGHPUT_WINDOW_S = 60;

export function stepsPerMinute(committedInWindow: number, windowSeconds = THROUGHPUT_WINDOW_S): number {
  return windowSeconds > 0 ? (committedInWindow * 60) / windowSeconds : 0;
}

/**
 * A run's rate, from its latest commits: those in the minute before the latest one, over the span they
 * cover. A window in time rather than a count of steps, so a crash's gap does not drag the rate down; and
 * anchored at the latest commit rather than now, so a run that stopped keeps its last rate (the page says
 * it stalled). Null with fewer than two commits in that minute.
 */
export function recentRate(
  timings: Pick<StepTiming, 'committedAt'>[],
): { perSecond: number; windowSeconds: number } | null {
  const times = timings.map((t) => t.committedAt).sort((a, b) => a - b);
  const latest = times[times.length - 1];
  if (latest === undefined) return null;
  const recent = times.filter((t) => t >= latest - 60);
  if (recent.length < 2) return null;
  const span = latest - recent[0]!;
  if (span <= 0) return null;
  return { perSecond: (recent.length - 1) / span, windowSeconds: span };
}

/**
 * When a run last moved: the latest of its row's time and its progress's. The engine saves progress in each
 * step's commit without touching the run row, so the row alone says "25s ago" of a run that just advanced.
 * Null when nothing has a usable time (an outside client's row with none), for the page to say "never".
 */
export function lastActivity(...times: (number | null | undefined)[]): number | null {
  const usable = times.filter((t): t is number => typeof t === 'number' && Number.isFinite(t) && t > 0);
  return usable.length === 0 ? null : Math.max(...usable);
}

/**
 * How long a run has taken: from its first start to its end, or to now while it has not ended. Null before it
 * started. `ongoing` says the figure still grows.
 */
export function runDuration(
  startedAt: number | null,
  finishedAt: number | null,
  now: number,
): { seconds: number; ongoing: boolean } | null {
  if (startedAt === null || !Number.isFinite(startedAt) || startedAt <= 0) return null;
  const end = finishedAt !== null && Number.isFinite(finishedAt) && finishedAt > 0 ? finishedAt : null;
  return { seconds: Math.max(0, (end ?? now) - startedAt), ongoing: end === null };
}

/** "850 ms", "42 s", "3 m 05 s", "2 h 04 m", "3 d 2 h": a duration as people read one. */
export function durationText(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const s = Math.round(seconds);
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} m`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** Epoch seconds as "2026-12-01 08:05:03 UTC", or null for a time no Date can hold (a row written by hand). */
export function utcText(epochSeconds: number | null): string | null {
  if (epochSeconds === null || !Number.isFinite(epochSeconds) || epochSeconds <= 0) return null;
  const date = new Date(epochSeconds * 1000);
  if (Number.isNaN(date.getTime())) return null;
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}
