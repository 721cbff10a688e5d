/**
 * Log lines for a person at a terminal: `08:21:08.123 INFO  step executed  runId=r1 key=r1:step:0 …`.
 * Ours rather than pino-pretty: this is all a worker's terminal needs, pino-pretty would add a dozen
 * packages for it, and its usual form (a transport on a worker thread) writes beside our progress bars
 * instead of through them. Colour only marks the level, so the line reads the same without it.
 */
const LEVEL_COLOUR: Record<string, string> = {
  debug: '\x1b[36m',
  info: '\x1b[32m',
  warn: '\x1b[33m',
  error: '\x1b[31m',
};
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';

/** One of pino's JSON lines made readable; a line that is not JSON passes through unchanged. */
export function formatLine(line: string, colour = true): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, ...fields } = entry;
  // The time of day, UTC, as the JSON line has it: enough to place a line next to its neighbours.
  const clock = typeof time === 'string' ? time.slice(11, 23) : '';
  const name = String(level ?? '')
    .toUpperCase()
    .padEnd(5);
  const tag =
    colour && typeof level === 'string' && LEVEL_COLOUR[level] ? `${LEVEL_COLOUR[level]}${name}${RESET}` : name;
  const rest = Object.entries(fields).map(
    ([k, v]) => `${k}=${typeof v === 'string' && !/\s/.test(v) ? v : JSON.stringify(v)}`,
  );
  const tail = rest.length === 0 ? '' : colour ? `  ${DIM}${rest.join(' ')}${RESET}` : `  ${rest.join(' ')}`;
  return `${clock} ${tag} ${String(msg ?? '')}${tail}\n`;
}
