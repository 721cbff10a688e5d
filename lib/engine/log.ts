/**
 * Structured logs: pino, one JSON object a line on stderr, so workers' and the server's output can be
 * shipped as is. The same names everywhere, bound once rather than passed per line (a field bound and passed
 * again would be written twice): the worker binds `workerId` on its logger, each execution `runId`, `workflow`
 * and `attempt`, and RunContext adds `step` and `key` to a step's lines (LOG_FIELDS).
 *
 * Levels (LOG_LEVEL, read by lib/config.ts): a run's and a worker's events at info, a line per step at debug.
 *
 * On a terminal the same lines are printed readable instead (log-format.ts). Call sites see only the
 * Logger interface below, so the engine does not depend on pino's API.
 */
import pino from 'pino';
import type { LogLevel } from '../config';
import { formatLine } from './log-format';

export type LogFields = Record<string, unknown>;

/**
 * What a field is called on every line that has it: a log pipeline follows one step across workers by these.
 * `traceId` is reserved for a trace's id, should a caller bind one.
 */
export const LOG_FIELDS = ['runId', 'workflow', 'step', 'key', 'attempt', 'workerId', 'traceId'] as const;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(bindings: LogFields): Logger;
}

export interface LoggerOptions {
  /** Human-readable lines instead of JSON; the default is whether stderr is a terminal. */
  pretty?: boolean;
  /** Colour in human-readable lines (off under NO_COLOR: callers pass config().NO_COLOR). */
  colour?: boolean;
  /** The least severe line written (callers pass config().LOG_LEVEL); info by default. */
  level?: LogLevel;
}

/**
 * A logger writing to `write` (stderr when omitted). Lines are written synchronously: a worker killed
 * with SIGKILL has lost no line it logged before.
 */
export function createLogger(
  bindings: LogFields = {},
  write?: (line: string) => void,
  options: LoggerOptions = {},
): Logger {
  const pretty = options.pretty ?? Boolean(process.stderr.isTTY);
  const sink = write ?? ((line: string) => process.stderr.write(line));
  const destination = pretty
    ? { write: (line: string) => sink(formatLine(line, options.colour ?? true)) }
    : write
      ? { write }
      : pino.destination({ fd: 2, sync: true });
  const root = pino(
    {
      // No pid/hostname on every line: the worker id (host-pid-random) already says both.
      base: null,
      level: options.level ?? 'info',
      timestamp: pino.stdTimeFunctions.isoTime,
      // "level":"info" rather than pino's 30: readable in any log viewer, and what our lines always said.
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  return wrap(Object.keys(bindings).length > 0 ? root.child(bindings) : root);
}

function wrap(p: pino.Logger): Logger {
  return {
    debug: (message, fields) => p.debug(fields ?? {}, message),
    info: (message, fields) => p.info(fields ?? {}, message),
    warn: (message, fields) => p.warn(fields ?? {}, message),
    error: (message, fields) => p.error(fields ?? {}, message),
    child: (bindings) => wrap(p.child(bindings)),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silentLogger };
