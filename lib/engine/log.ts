/**
 * Step-level logs: one JSON object a line on stderr so workers' output can be shipped as is; run id,
 * key and worker ride on every line through bindings.
 */
export type LogFields = Record<string, unknown>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(bindings: LogFields): Logger;
}

export function createLogger(bindings: LogFields = {}, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const emit = (level: string) => (message: string, fields: LogFields = {}) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...bindings, ...fields })}\n`);
  return {
    info: emit('info'),
    warn: emit('warn'),
    error: emit('error'),
    child: (more) => createLogger({ ...bindings, ...more }, write),
  };
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {}, child: () => silentLogger };
