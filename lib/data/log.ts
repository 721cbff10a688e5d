import 'server-only';
/**
 * The dashboard server's logger: the same structured lines as the workers', tagged `component: web`, so
 * one log pipeline reads both. Route handlers log failures here and answer the client without internals.
 */
import { config } from '../config';
import { createLogger } from '../engine/log';

const cache = globalThis as { waybillServerLog?: ReturnType<typeof createLogger> };

export function serverLog(): ReturnType<typeof createLogger> {
  cache.waybillServerLog ??= createLogger({ component: 'web' }, undefined, {
    colour: !config().NO_COLOR,
    level: config().LOG_LEVEL,
  });
  return cache.waybillServerLog;
}

/** An error's message and stack for the server log (never for a response body). */
export function errorFields(error: unknown): { error: string; stack?: string } {
  if (!(error instanceof Error)) return { error: String(error) };
  // A bundled server may have minified a class's name away: then the message alone.
  return { error: error.name ? `${error.name}: ${error.message}` : error.message, stack: error.stack };
}
