/**
 * The bounds of a run's log, both backends' and every writer's: a line's length and the lines kept per run.
 * A program that prints one 50 MB line, or a million short ones, costs the store a few hundred kilobytes.
 */
import type { RunLogInput } from '../contract/logs';

/** Longer lines are cut, with a marker saying how much: a log line is for people, a result goes through a step. */
export const MAX_LOG_LINE_CHARS = 4000;
/** Lines kept per run unless configured (WAYBILL_RUN_LOG_LINES): the newest, the older ones are deleted. */
export const DEFAULT_LOG_KEEP = 2000;
export const MAX_LOG_KEEP = 100_000;

/**
 * The line as stored: one line (CR and LF become spaces, NUL, which PostgreSQL's text refuses, becomes U+FFFD),
 * at most MAX_LOG_LINE_CHARS with the marker.
 */
export function boundLogLine(text: string): string {
  const flat = /[\r\n\0]/.test(text) ? text.replace(/[\r\n]+/g, ' ').replaceAll('\0', '\ufffd') : text;
  if (flat.length <= MAX_LOG_LINE_CHARS) return flat;
  const marker = ` … [cut: ${flat.length.toLocaleString('en-US')} characters in all]`;
  // Not mid surrogate pair: the stored text stays valid UTF-16 (and so valid UTF-8 in PostgreSQL).
  let end = MAX_LOG_LINE_CHARS - marker.length;
  const code = flat.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return flat.slice(0, end) + marker;
}

/** A keep count a store accepts: a whole number in [1, MAX_LOG_KEEP]. */
export function checkLogKeep(keep: number): number {
  if (!(Number.isInteger(keep) && keep >= 1 && keep <= MAX_LOG_KEEP))
    throw new RangeError(`keep must be a whole number from 1 to ${MAX_LOG_KEEP}, not ${keep}`);
  return keep;
}

/** The lines of each run, in their order: each backend appends run by run. */
export function groupByRun(lines: RunLogInput[]): Map<string, RunLogInput[]> {
  const out = new Map<string, RunLogInput[]>();
  for (const line of lines) {
    const own = out.get(line.runId);
    if (own) own.push(line);
    else out.set(line.runId, [line]);
  }
  return out;
}
