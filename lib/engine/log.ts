/**
 * Structured logs: pino, one JSON object a line on stderr, so workers' and the server's output can be
 * shipped as is. Run id, key and worker ride on every step line through child bindings (the worker binds
 * runId, workflow and workerId for each run; RunContext adds key, step and attempt).
 *
 * On a terminal the same lines are printed readable instead (log-format.ts). Call sites see only the
 * Logger interface below, so the engine does not depend on pino's API.
 */
import pino from 'pino';
import { formatLine } from './log-format';

export type LogFields = Record<string, unknown>;

export interface Logger {
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
    info: (message, fields) => p.info(fields ?? {}, message),
    warn: (message, fields) => p.warn(fields ?? {}, message),
    error: (message, fields) => p.error(fields ?? {}, message),
    child: (bindings) => wrap(p.child(bindings)),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {}, child: () => silentLogger };
