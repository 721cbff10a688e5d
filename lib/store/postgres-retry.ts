/**
 * Which PostgreSQL failures are worth a retry, and the retry itself. Transient: the connection was lost
 * (reset, refused, the server shut the backend down or is starting up, any class 08 error) and the two
 * conflicts PostgreSQL rolls back for us (serialization failure, deadlock). Everything else is a bug or
 * a bad input and surfaces at once, with its SQLSTATE in `code` as node-postgres gives it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { StoreUnavailableError } from '../errors';

const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '57P01', '57P02', '57P03']);
const CONNECTION_ERRNOS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** The connection went away: a statement sent on it may or may not have been committed. */
export function isConnectionLoss(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (CONNECTION_ERRNOS.has(code) || code.startsWith('08') || code.startsWith('57P0')) return true;
  }
  return typeof message === 'string' &&
    (message.includes('Connection terminated') || message.includes('is not queryable') || message.includes('not connected'));
}

export function isTransient(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isConnectionLoss(error) || (typeof code === 'string' && TRANSIENT_SQLSTATES.has(code));
}

export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
}

/**
 * Enough to ride out a server that kills every connection a few times a second, and a restart of a few
 * seconds at most; a longer outage surfaces as StoreUnavailableError so the engine's own backoff takes over.
 */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseMs: 10, maxMs: 1000 };

/**
 * Runs fn until it succeeds, a non-transient error escapes, or the attempts run out. onTransient sees each
 * transient failure before the next attempt (commit uses it to note that an attempt's outcome is unknown).
 */
export async function withRetry<T>(
  what: string,
  fn: (attempt: number) => Promise<T>,
  options: { policy?: RetryPolicy; onTransient?: (error: unknown) => void } = {},
): Promise<T> {
  const policy = options.policy ?? DEFAULT_RETRY;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (!isTransient(error)) throw error;
      if (attempt >= policy.attempts) {
        const code = (error as { code?: string }).code ?? 'unknown';
        throw new StoreUnavailableError(`PostgreSQL ${what} failed ${attempt} times (last: ${code}: ${describe(error)})`, error);
      }
      options.onTransient?.(error);
      // Jittered: workers that lost their connections together do not all come back together.
      const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
      await sleep(ceiling / 2 + (Math.random() * ceiling) / 2);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
