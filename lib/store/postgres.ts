/**
 * The PostgreSQL backend: how Waybill scales past one machine, many workers on many hosts against one
 * database. Same semantics as sqlite.ts; the differences are how they are reached:
 *
 * - Every operation is one round trip (postgres-sql.ts) and its own transaction. The claim is a PL/pgSQL
 *   function rather than one statement, because it must read `committed` again, with a fresh snapshot,
 *   after inserting a claim (drizzle/pg/0001_claim_function.sql says why).
 * - Time is the database's clock, never the worker's: hosts disagree, the database is the one judge of
 *   whose lease has passed. An injected clock only shifts it, by how far that clock is from this host's
 *   (zero for the system clock), so tests can move time as they do on SQLite.
 * - Lost connections, serialization failures and deadlocks are retried with jittered backoff
 *   (postgres-retry.ts). A statement whose connection died after it was sent may have committed: the claim
 *   recognises its own token, and the commit recognises its own row (see commit below).
 */
import pg from 'pg';
import { systemClock, type Clock } from '../clock';
import { ClaimNotOrphanedError, InvalidInputError, LeaseLostError, NotFoundError, StoreUnavailableError } from '../errors';
import { findMigrationsDir, readMigrations } from './migrations';
import { migratePostgres } from './postgres-migrate';
import { capPoolWhenRefused, mayHaveRun, withRetry } from './postgres-retry';
import { PostgresPrune } from './postgres-prune';
import { beginLoopRun, endLoopRun } from './postgres-loop-runs';
import { seedPostgres } from './postgres-seed';
import type { SeedOptions, SeedReport, SeedStore } from './seed';
import * as sql from './postgres-sql';
import type {
  ClaimOutcome, ClaimRequest, ClaimRow, CommitOutcome, CommitRequest, CommittedRow, LoopRunEnd, LoopRunStart, ProgressRow,
  ProgressWrite, RunStatus, AuditStore, InsightStore, ReleaseRequest, ResolveRequest, RetentionStore, RunStore, StepEvent, Store,
} from './types';

export interface PostgresStoreOptions {
  /**
   * postgres://user@host:port/database. An application_name in it replaces the default 'waybill';
   * `options` in it (e.g. `-c synchronous_commit=off`) are kept alongside the schema's search_path.
   */
  url: string;
  /** Set as search_path on every pooled connection and created if missing: one store per schema. */
  schema?: string;
  clock?: Clock;
  /** Connections kept open; the default suits one worker. Benchmarks raise it with concurrency. */
  poolSize?: number;
}

type Stored<T> = Omit<T, 'orphaned'>;
/** RESOLVE_SQL's answer: `seen` is null when the statement's snapshot held no claim on the key. */
type ResolveRow = { inserted: number; runId: string | null; seen: { attempt: number; orphaned: boolean } | null; committedSeen: boolean };
type ClaimResult = {
  kind: 'committed' | 'taken' | 'mine' | 'fresh' | 'held' | 'retry';
  done: CommittedRow | null;
  holder: Stored<ClaimRow> | null;
  old: Stored<ClaimRow> | null;
  attempt: number | null;
  leaseExpiresAt: number | null;
  msUntilExpiry: number | null;
};

/** A statement that found its row changed under its snapshot runs again; this many times means a bug. */
const MAX_CLAIM_ROUNDS = 100;

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const { schema } = options;
  // The name goes into a startup option unquoted, where PostgreSQL would fold case and split on spaces.
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new InvalidInputError(`schema must be a lowercase SQL identifier, got ${JSON.stringify(schema)}`);
  }
  const { url, startup } = splitStartupOptions(options.url);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // Operators (and our tests) find Waybill's connections in pg_stat_activity by this name.
    fallback_application_name: 'waybill',
    options: [startup, schema ? `-c search_path=${schema}` : ''].filter(Boolean).join(' ') || undefined,
  });
  // An idle connection the server closed (restart, pg_terminate_backend, idle timeout) emits 'error' on
  // the pool, which throws if nobody listens. The pool has already dropped it; the next query reconnects.
  pool.on('error', () => undefined);
  capPoolWhenRefused(pool);
  try {
    const migrations = readMigrations(findMigrationsDir('pg'));
    await withRetry('migration', async () => {
      const client = await pool.connect();
      // Checked out, the client is not covered by the pool's listener: a connection killed between two of
      // the migration's statements would otherwise be an unhandled 'error'. The next statement fails instead.
      const ignore = () => undefined;
      client.on('error', ignore);
      let failure: unknown;
      try {
        await migratePostgres(client, migrations, schema);
      } catch (error) {
        failure = error;
        throw error;
      } finally {
        // A connection that failed mid-migration is not handed out again.
        client.off('error', ignore);
        client.release(failure instanceof Error ? failure : undefined);
      }
    });
    return new PostgresStore(pool, options.clock ?? systemClock);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
}

/** The step protocol here; runs and workers in postgres-runs.ts; the pool, skew and query in postgres-base.ts. */
export class PostgresStore extends PostgresPrune implements Store, RunStore, InsightStore, RetentionStore, AuditStore, SeedStore {
  readonly dialect = 'postgres' as const;

  async loadProgress(runId: string): Promise<ProgressRow | null> {
    return (await this.query<ProgressRow>('waybill_progress', sql.PROGRESS_SQL, [runId])).rows[0] ?? null;
  }

  async saveProgress(w: ProgressWrite): Promise<void> {
    // A retry of an attempt that committed but lost its answer adds the counter deltas twice: the map
    // itself is idempotent, the counters are metrics. Commits, which carry most progress writes, cannot.
    await this.query('waybill_save_progress', sql.SAVE_PROGRESS_SQL,
      [w.runId, w.step, w.stateJson, w.executed, w.skipped, w.awaited, this.skew(), w.saveMs ?? null]);
  }

  async claim(r: ClaimRequest): Promise<ClaimOutcome> {
    const values = [r.idemKey, r.runId, r.token, r.workerId, r.step, r.attempt, r.leaseMs / 1000, r.claimTtlMs / 1000];
    for (let round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      const outcome = claimOutcome((await this.query<ClaimResult>('waybill_claim', sql.CLAIM_SQL, [...values, this.skew()])).rows[0]!);
      if (outcome) return outcome;
    }
    throw new StoreUnavailableError(`claim on ${r.idemKey} kept racing concurrent writers`, undefined);
  }

  async renewClaim(idemKey: string, token: string, leaseMs: number): Promise<boolean> {
    const result = await this.query('waybill_renew', sql.RENEW_SQL, [idemKey, token, leaseMs / 1000, this.skew()]);
    return result.rowCount === 1;
  }

  /**
   * A commit whose connection died after the statement was sent may have landed. Retried, it then finds
   * its claim gone and would report LeaseLost for a result that is in the table. The rule: only after such
   * a loss, a missed delete is checked against `committed`; a row with this call's worker, run, step,
   * fingerprint, result and duration (measured to a fraction of a microsecond, so no other call's) is our
   * own earlier attempt, and the commit succeeded. Anything else is a lost lease. The statement never
   * writes a second result (the delete is token-fenced, the insert does nothing on conflict), so a retry
   * can at worst fail to recognise its own success, never double-commit.
   */
  async commit(r: CommitRequest): Promise<CommitOutcome> {
    const p = r.progress;
    const n = r.next;
    const values = [r.idemKey, r.token, r.runId, r.resultJson, r.step, r.fingerprint, r.workerId, r.durationMs,
      p?.runId ?? null, p?.step ?? null, p?.stateJson ?? null, p?.executed ?? null, p?.skipped ?? null, p?.awaited ?? null];
    const next = n ? [n.idemKey, n.runId, n.token, n.workerId, n.step, n.attempt, n.leaseMs / 1000, n.claimTtlMs / 1000]
      : [null, null, null, null, null, null, null, null];
    let outcomeUnknown = r.mayHaveLanded ?? false;
    const settled = await withRetry('commit', async (): Promise<CommitOutcome | { lost: string | undefined }> => {
      const row = (await this.pool.query<{ deleted: number; inserted: number; heldByUs: boolean; next: ClaimResult | null; runStatus: RunStatus | null }>(
        { name: 'waybill_commit', text: sql.COMMIT_SQL, values: [...values, this.skew(), p?.saveMs ?? null, ...next] })).rows[0]!;
      if (row.inserted === 1) return { next: row.next ? claimOutcome(row.next) : null, runStatus: row.runStatus };
      if (outcomeUnknown) {
        const landed = await this.pool.query({ name: 'waybill_landed', text: sql.LANDED_SQL,
          values: [r.idemKey, r.runId, r.resultJson, r.step, r.fingerprint, r.workerId, r.durationMs] });
        // Landed with it, or not, the next claim is unknown: the caller claims again with the same token.
        if (landed.rowCount === 1) return { next: null, runStatus: row.runStatus };
      }
      return { lost: row.deleted === 1 || row.heldByUs ? 'the key was committed by someone else meanwhile' : undefined };
    }, { onTransient: (error) => { outcomeUnknown ||= mayHaveRun(error); } });
    if ('runStatus' in settled) return settled;
    const error = new LeaseLostError(r.idemKey, settled.lost);
    await this.event({ runId: r.runId, idemKey: r.idemKey, step: r.step, outcome: 'lease_lost', workerId: r.workerId,
      durationMs: r.durationMs, detail: error.message });
    throw error;
  }

  async releaseClaim(r: ReleaseRequest): Promise<void> {
    let outcomeUnknown = false;
    await withRetry('release', () => this.pool.query({ name: 'waybill_release', text: sql.RELEASE_SQL,
      values: [r.idemKey, r.token, r.runId, r.step, r.durationMs, r.workerId, this.skew(), r.error, outcomeUnknown] }),
    { onTransient: (error) => { outcomeUnknown ||= mayHaveRun(error); } });
  }

  async getCommitted(idemKey: string): Promise<CommittedRow | null> {
    return (await this.query<CommittedRow>('waybill_committed', sql.COMMITTED_SQL, [idemKey])).rows[0] ?? null;
  }

  async countCommitted(runId: string): Promise<number> {
    return (await this.query<{ n: number }>(undefined, sql.COUNT_COMMITTED_SQL, [runId])).rows[0]!.n;
  }

  async listCommitted(runId: string, options: { limit?: number; afterKey?: string } = {}): Promise<CommittedRow[]> {
    return (await this.query<CommittedRow>(undefined, sql.LIST_COMMITTED_SQL,
      [runId, options.afterKey ?? null, options.limit ?? 1000])).rows;
  }

  async listClaims(options: Parameters<Store['listClaims']>[0] & object): Promise<ClaimRow[]> {
    return (await this.query<ClaimRow>(undefined, sql.LIST_CLAIMS_SQL,
      [options.runId ?? null, options.orphanedOnly ?? false, options.claimTtlMs / 1000, this.skew(),
        options.limit ?? null, options.after?.claimedAt ?? null, options.after?.idemKey ?? null])).rows;
  }

  async getClaim(idemKey: string, options: { claimTtlMs: number }): Promise<ClaimRow | null> {
    return (await this.query<ClaimRow>('waybill_get_claim', sql.GET_CLAIM_SQL, [idemKey, options.claimTtlMs / 1000, this.skew()])).rows[0] ?? null;
  }

  async expireClaim(idemKey: string, options: { actor: string; force?: boolean; claimTtlMs: number }): Promise<'expired' | 'missing' | 'live'> {
    const { rows } = await this.query<{ n: number; claimSeen: boolean }>(undefined, sql.EXPIRE_SQL,
      [idemKey, options.force ?? false, options.claimTtlMs / 1000, options.actor, this.skew()]);
    // The statement's snapshot still shows the row it deleted, so claimSeen means "there was a claim".
    return rows[0]!.n === 1 ? 'expired' : rows[0]!.claimSeen ? 'live' : 'missing';
  }

  async resolveClaim(r: ResolveRequest): Promise<{ runId: string }> {
    let outcomeUnknown = false;
    const detail = `resolved by ${r.actor}${r.note ? `: ${r.note}` : ''}`;
    const row = await withRetry('resolve', async () =>
      (await this.pool.query<ResolveRow>({ text: sql.RESOLVE_SQL,
        values: [r.idemKey, r.resultJson, detail, this.skew(), r.force ?? false, r.claimTtlMs / 1000, r.attempt ?? null] })).rows[0]!,
    { onTransient: (error) => { outcomeUnknown ||= mayHaveRun(error); } });
    if (row.inserted === 1) return { runId: row.runId! };
    if (!row.seen) {
      // The same rule as commit: after a lost connection, our own manual row means the first try landed.
      const done = outcomeUnknown ? await this.getCommitted(r.idemKey) : null;
      if (done?.source === 'manual' && done.resultJson === r.resultJson) return { runId: done.runId };
      throw new NotFoundError(`claim on ${r.idemKey}`);
    }
    if (row.committedSeen) throw new LeaseLostError(r.idemKey, 'the key is already committed');
    if (r.attempt !== undefined && row.seen.attempt !== r.attempt) {
      throw new ClaimNotOrphanedError(r.idemKey, 'replaced', `was taken over since (attempt ${row.seen.attempt}, not ${r.attempt})`);
    }
    if (!row.seen.orphaned && !r.force) {
      throw new ClaimNotOrphanedError(r.idemKey, 'live', 'has a live lease (its holder may be executing it)');
    }
    // The snapshot showed the claim resolvable, but its newest version was not: a takeover landed meanwhile.
    throw new ClaimNotOrphanedError(r.idemKey, 'replaced', 'was taken over while it was being resolved');
  }

  async listEvents(runId: string, options: { limit?: number; afterId?: number } = {}): Promise<StepEvent[]> {
    return (await this.query<StepEvent>(undefined, sql.LIST_EVENTS_SQL,
      [runId, options.afterId ?? 0, options.limit ?? 1000])).rows;
  }

  async beginLoopRun(r: LoopRunStart): Promise<{ status: RunStatus; created: boolean }> {
    return beginLoopRun((fn) => this.inTransaction(fn), r, this.skew());
  }

  async endLoopRun(r: LoopRunEnd): Promise<RunStatus | null> {
    return endLoopRun(this.pool, r, this.skew());
  }

  async seedDemo(options: SeedOptions, onProgress?: (done: number, total: number) => void): Promise<SeedReport> {
    return seedPostgres(this.pool, options, this.skew(), onProgress);
  }

  async close(): Promise<void> {
    if (!this.pool.ending) await this.pool.end();
  }

  private async event(e: Partial<StepEvent> & Pick<StepEvent, 'runId' | 'outcome'>): Promise<void> {
    await this.query('waybill_event', sql.EVENT_SQL, [e.runId, e.idemKey ?? null, e.step ?? null, e.outcome, e.count ?? 1,
      e.durationMs ?? null, e.workerId ?? null, e.detail ?? null, this.skew()]);
  }
}

/**
 * Takes `options` (server settings such as `-c synchronous_commit=off`) out of the URL so that the schema's
 * search_path can be added to them: node-postgres would let the URL's value replace ours.
 */
function splitStartupOptions(raw: string): { url: string; startup: string } {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return { url: raw, startup: '' };
  }
  const startup = parsed.searchParams.get('options') ?? '';
  if (!startup) return { url: raw, startup };
  parsed.searchParams.delete('options');
  return { url: parsed.toString(), startup };
}

/** What waybill_claim decided, as claim() reports it; null for `retry` (the key changed under it: claim again). */
function claimOutcome(row: ClaimResult): ClaimOutcome | null {
  switch (row.kind) {
    case 'committed':
      return { kind: 'committed', row: row.done! };
    case 'held':
      return { kind: 'held', holder: claimRow(row.holder!, false), msUntilExpiry: row.msUntilExpiry! };
    case 'taken':
      return { kind: 'claimed', attempt: row.attempt!, leaseExpiresAt: row.leaseExpiresAt!, tookOverFrom: claimRow(row.old!, true) };
    case 'fresh':
    case 'mine':
      return { kind: 'claimed', attempt: row.attempt!, leaseExpiresAt: row.leaseExpiresAt!, tookOverFrom: null };
    case 'retry':
      return null;
  }
}

function claimRow(row: Stored<ClaimRow>, orphaned: boolean): ClaimRow {
  return {
    idemKey: row.idemKey, runId: row.runId, claimedAt: row.claimedAt, token: row.token, workerId: row.workerId,
    leaseExpiresAt: row.leaseExpiresAt, heartbeatAt: row.heartbeatAt, step: row.step, attempt: row.attempt, orphaned,
  };
}
