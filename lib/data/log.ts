import 'server-only';
/**
 * The dashboard server's logger: the same structured lines as the workers', tagged `component: web`, so
 * one log pipeline reads both. Route handlers log failures here and answer the client without internals.
 */
import { createLogger } from '../engine/log';

const cache = globalThis as { waybillServerLog?: ReturnType<typeof createLogger> };

export function serverLog(): ReturnType<typeof createLogger> {
  cache.waybillServerLog ??= createLogger({ component: 'web' });
  return cache.waybillServerLog;
}

/** An error's message and stack for the server log (never for a response body). */
export function errorFields(error: unknown): { error: string; stack?: string } {
  return error instanceof Error ? { error: `${error.name}: ${error.message}`, stack: error.stack } : { error: String(error) };
}
