/**
 * Which PostgreSQL failures are worth a retry, and the retry itself. Transient: the connection was lost
 * (reset, refused, the server shut the backend down or is starting up, any class 08 error), the two
 * conflicts PostgreSQL rolls back for us (serialization failure, deadlock), a statement cancelled
 * (pg_cancel_backend, statement_timeout, lock_timeout) and a connection refused for want of slots (too many
 * connections, for the server or the role). Everything else is a bug or a bad input and surfaces at once,
 * with its SQLSTATE in `code` as node-postgres gives it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DrizzleQueryError } from 'drizzle-orm';
import type pg from 'pg';
import { StoreUnavailableError } from '../../errors';

/** 53300 is refused at connect, before anything ran; the rest are rolled back by the server. */
const TRANSIENT_SQLSTATES = new Set(['40001', '40P01', '57P01', '57P02', '57P03', '57014', '55P03', '53300']);
/**
 * A cancel is an interrupt that races the statement: the server should roll back what it cancels, but the
 * statement was sent, ran for a while and the cancel could have come from anyone. We take no chances and
 * retry it as a lost answer (a commit then looks for its own row, a claim finds its own token), as the
 * design (docs/DESIGN-DECISIONS.md) promises for every call whose outcome the caller did not see.
 */
const CANCELLED_SQLSTATES = new Set(['57014', '55P03']);
const CONNECTION_ERRNOS = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** The connection went away: a statement sent on it may or may not have been committed. */
export function isConnectionLoss(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (CONNECTION_ERRNOS.has(code) || code.startsWith('08') || code.startsWith('57P0')) return true;
  }
  return (
    typeof message === 'string' &&
    (message.includes('Connection terminated') ||
      message.includes('is not queryable') ||
      message.includes('not connected'))
  );
}

/** The call's outcome is unknown: the connection went away, or the statement was cancelled while it ran. */
export function mayHaveRun(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return isConnectionLoss(error) || (typeof code === 'string' && CANCELLED_SQLSTATES.has(code));
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
    } catch (thrown) {
      const error = driverError(thrown);
      if (!isTransient(error)) throw error;
      if (attempt >= policy.attempts) {
        const code = (error as { code?: string }).code ?? 'unknown';
        throw new StoreUnavailableError(
          `PostgreSQL ${what} failed ${attempt} times (last: ${code}: ${describe(error)})`,
          error,
        );
      }
      options.onTransient?.(error);
      // Jittered: workers that lost their connections together do not all come back together.
      const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** (attempt - 1));
      await sleep(ceiling / 2 + (Math.random() * ceiling) / 2);
    }
  }
}

/**
 * A conditional write (it changes a row only when the row is not so already), retried while transient: the row it
 * wrote, or null when it found the row so already. A retry whose first send landed but lost its answer finds the
 * row as that send left it, and `ownWrite` says whether the row read again is what this call's write made: then
 * the change is this call's, not null. `absent` is thrown when there is no row at all.
 */
export async function writeOnce<R>(
  what: string,
  write: () => Promise<R | undefined>,
  reread: () => Promise<R | null>,
  ownWrite: (row: R) => boolean,
  absent: () => Error,
): Promise<R | null> {
  let outcomeUnknown = false;
  const written = await withRetry(what, write, {
    onTransient: (error) => {
      outcomeUnknown ||= mayHaveRun(error);
    },
  });
  if (written !== undefined) return written;
  const row = await withRetry(what, reread);
  if (!row) throw absent();
  return outcomeUnknown && ownWrite(row) ? row : null;
}

/**
 * The driver's own error under Drizzle's wrapper: DrizzleQueryError carries node-postgres's error (its
 * SQLSTATE in `code`) as `cause`, and its message holds the statement's parameters, which are not for logs
 * or answers. Everything else is itself.
 */
export function driverError(error: unknown): unknown {
  return error instanceof DrizzleQueryError && error.cause !== undefined ? error.cause : error;
}

/** Runs fn once, its failure the driver's own (see driverError): for a Drizzle query that is not retried. */
export async function unwrapped<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw driverError(error);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** How long a pool refused a connection (53300) stays at the size it had, before it tries to grow again. */
const REFUSED_HOLD_MS = 10_000;

/**
 * A pool asks for a new connection whenever all of its connections are busy and it is below its size. When
 * the server (max_connections) or the role (CONNECTION LIMIT) grants fewer than that, every such request is
 * refused with 53300, and retrying it only asks again while the connections it has stay busy: runs failed
 * under a connection limit, retries or not. So on a refusal the pool is capped at the connections it has
 * and queues on them; after a while it may grow again, and a refusal caps it again.
 */
export function capPoolWhenRefused(pool: pg.Pool): void {
  const options = (pool as unknown as { options: { max: number } }).options;
  const size = options.max;
  let uncap: NodeJS.Timeout | undefined;
  const refused = (error: unknown) => {
    if ((error as { code?: unknown } | null)?.code !== '53300') return;
    options.max = Math.max(1, Math.min(options.max, pool.totalCount));
    clearTimeout(uncap);
    uncap = setTimeout(() => (options.max = size), REFUSED_HOLD_MS);
    uncap.unref();
  };
  const connect = pool.connect.bind(pool) as (
    cb?: (error: Error | undefined, ...rest: unknown[]) => void,
  ) => Promise<pg.PoolClient> | undefined;
  // pool.query checks out through this.connect(callback), so both forms are covered.
  (pool as unknown as { connect: typeof connect }).connect = (cb) => {
    if (cb) {
      return connect((error, ...rest) => {
        refused(error);
        cb(error, ...rest);
      });
    }
    return connect()!.catch((error: unknown) => {
      refused(error);
      throw error;
    });
  };
}
