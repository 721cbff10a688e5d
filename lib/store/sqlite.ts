/**
 * The embedded backend: one SQLite file in WAL mode, shared by every process on the machine.
 *
 * better-sqlite3 is synchronous, so every transaction here is a plain function run under BEGIN IMMEDIATE
 * (the write lock is taken up front: a deferred transaction that upgrades later fails with SQLITE_BUSY
 * instead of waiting). Nothing awaits inside a transaction; the side effect always runs between two of them.
 * The hot path uses prepared statements directly: at tens of microseconds a step, a query builder's
 * per-call work would be a visible share of the cost.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { systemClock, type Clock } from '../clock';
import { ClaimNotOrphanedError, LeaseLostError, NotFoundError } from '../errors';
import { guard } from './sqlite-base';
import { SqlitePrune } from './sqlite-prune';
import { findMigrationsDir, readMigrations } from './migrations';
import { migrateSqlite } from './sqlite-migrate';
import { seedSqlite } from './sqlite-seed';
import { beginLoopRunIn, endLoopRunIn } from './sqlite-loop-runs';
import { busyTimeoutFor } from './sqlite-timeouts';
import type { SeedOptions, SeedReport, SeedStore } from './seed';
import type {
  ClaimOutcome, ClaimRequest, ClaimRow, CommitOutcome, CommitRequest, CommittedRow, LoopRunEnd, LoopRunStart, ProgressRow,
  ProgressWrite, RunStatus, AuditStore, InsightStore, ReleaseRequest, ResolveRequest, RetentionStore, RunStore, StepEvent, Store,
} from './types';

export interface SqliteStoreOptions {
  /** A file path, or ':memory:'. */
  path: string;
  /** FULL survives power loss; NORMAL survives a killed process only, and is several times faster. */
  synchronous?: 'full' | 'normal';
  /** The write-lock wait; unset, it is derived from `leaseMs` (see sqlite-timeouts.ts). */
  busyTimeoutMs?: number;
  /** The shortest step lease this store will grant (WAYBILL_LEASE_MS); keeps the lock wait inside it. */
  leaseMs?: number;
  clock?: Clock;
  migrationsDir?: string;
}

const COMMITTED_COLUMNS = `idem_key AS idemKey, run_id AS runId, result_json AS resultJson,
  committed_at AS committedAt, step, fingerprint, worker_id AS workerId, duration_ms AS durationMs, source`;
const CLAIM_COLUMNS = `idem_key AS idemKey, run_id AS runId, claimed_at AS claimedAt, token,
  worker_id AS workerId, lease_expires_at AS leaseExpiresAt, heartbeat_at AS heartbeatAt, step, attempt`;
/** A claim with no lease column was written by an outside client: it lives claim TTL after claimed_at. */
const EXPIRES_AT = `coalesce(lease_expires_at, claimed_at + @ttl)`;

type RawClaim = Omit<ClaimRow, 'orphaned'> & { orphaned?: number };

export function openSqliteStore(options: SqliteStoreOptions): SqliteStore {
  if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true });
  const db = new Database(options.path, { timeout: options.busyTimeoutMs ?? busyTimeoutFor(options.leaseMs) });
  try {
    db.pragma('journal_mode = WAL');
    // better-sqlite3 leaves WAL databases at NORMAL unless told; FULL is the durable default.
    db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    const clock = options.clock ?? systemClock;
    migrateSqlite(db, readMigrations(findMigrationsDir('sqlite', options.migrationsDir)), clock.now() / 1000);
    return new SqliteStore(db, clock);
  } catch (error) {
    db.close();
    throw error;
  }
}

export class SqliteStore extends SqlitePrune implements Store, RunStore, InsightStore, RetentionStore, AuditStore, SeedStore {
  readonly dialect = 'sqlite' as const;
  private readonly s;

  constructor(db: Database.Database, clock: Clock) {
    super(db, clock);
    // The hot path binds positionally: named parameters and spreads with extra keys cost microseconds a
    // call on Node 20, a visible share of a step at NORMAL.
    this.s = {
      progress: db.prepare<[string], ProgressRow>(`SELECT run_id AS runId, step, state_json AS stateJson,
        updated_at AS updatedAt, executed, skipped, awaited, save_ms AS saveMs FROM progress WHERE run_id = ?`),
      upsertProgress: db.prepare(`INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
          updated_at = excluded.updated_at, executed = executed + excluded.executed,
          skipped = skipped + excluded.skipped, awaited = awaited + excluded.awaited,
          save_ms = coalesce(excluded.save_ms, save_ms)`),
      committed: db.prepare<[string], CommittedRow>(`SELECT ${COMMITTED_COLUMNS} FROM committed WHERE idem_key = ?`),
      countCommitted: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM committed WHERE run_id = ?'),
      claim: db.prepare<[string], RawClaim>(`SELECT ${CLAIM_COLUMNS} FROM claims WHERE idem_key = ?`),
      insertClaim: db.prepare(`INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id,
        lease_expires_at, heartbeat_at, step, attempt)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      takeOver: db.prepare(`UPDATE claims SET run_id = ?, claimed_at = ?, token = ?, worker_id = ?,
        lease_expires_at = ?, heartbeat_at = ?, step = ?, attempt = ? WHERE idem_key = ?`),
      renew: db.prepare(`UPDATE claims SET lease_expires_at = @leaseExpiresAt, heartbeat_at = @now
        WHERE idem_key = @idemKey AND token = @token`),
      deleteOwnClaim: db.prepare('DELETE FROM claims WHERE idem_key = ? AND token = ?'),
      deleteClaim: db.prepare('DELETE FROM claims WHERE idem_key = ?'),
      insertCommitted: db.prepare(`INSERT INTO committed (idem_key, run_id, result_json, committed_at, step,
        fingerprint, worker_id, duration_ms, source)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (idem_key) DO NOTHING`),
      runStatus: db.prepare<[string], { status: RunStatus }>('SELECT status FROM runs WHERE id = ?'),
    };
  }

  async loadProgress(runId: string): Promise<ProgressRow | null> {
    return guard(() => this.s.progress.get(runId) ?? null);
  }

  async saveProgress(write: ProgressWrite): Promise<void> {
    const now = this.now();
    this.tx(() => this.writeProgress(write, now));
  }

  async claim(r: ClaimRequest): Promise<ClaimOutcome> {
    const now = this.now();
    return this.tx(() => this.claimIn(r, now));
  }

  async renewClaim(idemKey: string, token: string, leaseMs: number): Promise<boolean> {
    const now = this.now();
    return guard(() => this.s.renew.run({ idemKey, token, now, leaseExpiresAt: now + leaseMs / 1000 }).changes === 1);
  }

  async commit(r: CommitRequest): Promise<CommitOutcome> {
    const now = this.now();
    try {
      return this.tx(() => {
        if (this.s.deleteOwnClaim.run(r.idemKey, r.token).changes === 0) {
          if (r.mayHaveLanded && this.landed(r)) return { next: null, runStatus: this.runStatusOf(r.runId) };
          throw new LeaseLostError(r.idemKey);
        }
        const inserted = this.s.insertCommitted.run(r.idemKey, r.runId, r.resultJson, now, r.step, r.fingerprint,
          r.workerId, r.durationMs, 'executed');
        if (inserted.changes === 0) {
          throw new LeaseLostError(r.idemKey, 'the key was committed by someone else meanwhile');
        }
        if (r.progress) this.writeProgress(r.progress, now);
        const runStatus = this.runStatusOf(r.runId);
        // A paused or cancelled run runs no step after this one: its next key is not claimed ahead.
        const stopped = runStatus === 'paused' || runStatus === 'cancelled';
        return { next: r.next && !stopped ? this.claimIn(r.next, now) : null, runStatus };
      });
    } catch (error) {
      if (error instanceof LeaseLostError) {
        this.event({ runId: r.runId, idemKey: r.idemKey, step: r.step, outcome: 'lease_lost', workerId: r.workerId,
          durationMs: r.durationMs, detail: error.message }, now);
      }
      throw error;
    }
  }

  /**
   * Whether this commit's row is in the table: the same worker, run, step, fingerprint, result and duration
   * (measured to a fraction of a microsecond, so no other call's). A failed SQLite transaction rolls back, so
   * this only answers true to a caller that retries a commit whose answer it never got.
   */
  private landed(r: CommitRequest): boolean {
    return this.prepared<unknown[], unknown>(`SELECT 1 FROM committed WHERE idem_key = ? AND source = 'executed' AND run_id = ?
      AND result_json = ? AND step IS ? AND fingerprint IS ? AND worker_id IS ? AND duration_ms = ?`)
      .get(r.idemKey, r.runId, r.resultJson, r.step, r.fingerprint, r.workerId, r.durationMs) !== undefined;
  }

  async releaseClaim(r: ReleaseRequest): Promise<void> {
    const now = this.now();
    this.tx(() => {
      this.s.deleteOwnClaim.run(r.idemKey, r.token);
      if (r.error === null) return;
      this.event({ runId: r.runId, idemKey: r.idemKey, step: r.step, outcome: 'failed', workerId: r.workerId,
        durationMs: r.durationMs, detail: r.error }, now);
    });
  }

  async getCommitted(idemKey: string): Promise<CommittedRow | null> {
    return guard(() => this.s.committed.get(idemKey) ?? null);
  }

  async countCommitted(runId: string): Promise<number> {
    return guard(() => this.s.countCommitted.get(runId)!.n);
  }

  async listCommitted(runId: string, options: { limit?: number; afterKey?: string } = {}): Promise<CommittedRow[]> {
    // Keyset on (step, key): the cursor is the last key seen, its step looked up by primary key.
    return guard(() => this.prepared<unknown[], CommittedRow>(`SELECT ${COMMITTED_COLUMNS} FROM committed
      WHERE run_id = @runId AND (@afterKey IS NULL OR (coalesce(step, -1), idem_key) >
        (SELECT coalesce(step, -1), idem_key FROM committed WHERE idem_key = @afterKey))
      ORDER BY coalesce(step, -1), idem_key LIMIT @limit`)
      .all({ runId, afterKey: options.afterKey ?? null, limit: options.limit ?? 1000 }));
  }

  async listClaims(options: Parameters<Store['listClaims']>[0] & object): Promise<ClaimRow[]> {
    const ttl = options.claimTtlMs / 1000;
    const rows = guard(() => this.prepared<unknown[], RawClaim>(`SELECT ${CLAIM_COLUMNS},
        ${EXPIRES_AT} <= @now AS orphaned FROM claims
      WHERE (@runId IS NULL OR run_id = @runId) AND (@orphanedOnly = 0 OR ${EXPIRES_AT} <= @now)
        AND (@afterAt IS NULL OR (claimed_at, idem_key) > (@afterAt, @afterKey))
      ORDER BY claimed_at, idem_key LIMIT @limit`)
      .all({ now: this.now(), ttl, runId: options.runId ?? null, orphanedOnly: options.orphanedOnly ? 1 : 0,
        afterAt: options.after?.claimedAt ?? null, afterKey: options.after?.idemKey ?? null, limit: options.limit ?? -1 }));
    return rows.map((row) => ({ ...row, orphaned: row.orphaned === 1 }));
  }

  async getClaim(idemKey: string, options: { claimTtlMs: number }): Promise<ClaimRow | null> {
    const row = guard(() => this.prepared<unknown[], RawClaim>(`SELECT ${CLAIM_COLUMNS}, ${EXPIRES_AT} <= @now AS orphaned
      FROM claims WHERE idem_key = @idemKey`).get({ idemKey, now: this.now(), ttl: options.claimTtlMs / 1000 }));
    return row ? { ...row, orphaned: row.orphaned === 1 } : null;
  }

  async expireClaim(idemKey: string, options: { actor: string; force?: boolean; claimTtlMs: number }): Promise<'expired' | 'missing' | 'live'> {
    const now = this.now();
    return this.tx(() => {
      const held = this.s.claim.get(idemKey);
      if (!held) return 'missing';
      if (expiresAt(held, options.claimTtlMs) > now && !options.force) return 'live';
      this.s.deleteClaim.run(idemKey);
      this.event({ runId: held.runId, idemKey, step: held.step, outcome: 'expired', workerId: held.workerId,
        detail: `expired by ${options.actor}: the step will run again` }, now);
      return 'expired';
    });
  }

  async resolveClaim(r: ResolveRequest): Promise<{ runId: string }> {
    const now = this.now();
    return this.tx(() => {
      const held = this.s.claim.get(r.idemKey);
      if (!held) throw new NotFoundError(`claim on ${r.idemKey}`);
      // Decided under the write lock, as expireClaim decides: no takeover can land between this and the delete.
      refuseResolve(r, held, now);
      this.s.deleteClaim.run(r.idemKey);
      const inserted = this.s.insertCommitted.run(r.idemKey, held.runId, r.resultJson, now, held.step, null, null, null, 'manual');
      if (inserted.changes === 0) throw new LeaseLostError(r.idemKey, 'the key is already committed');
      this.event({ runId: held.runId, idemKey: r.idemKey, step: held.step, outcome: 'resolved', workerId: held.workerId,
        detail: `resolved by ${r.actor}${r.note ? `: ${r.note}` : ''}` }, now);
      return { runId: held.runId };
    });
  }

  async listEvents(runId: string, options: { limit?: number; afterId?: number } = {}): Promise<StepEvent[]> {
    return guard(() => this.prepared<unknown[], StepEvent>(`SELECT id, run_id AS runId, idem_key AS idemKey, step,
        outcome, count, duration_ms AS durationMs, worker_id AS workerId, detail, at
      FROM step_events WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?`)
      .all(runId, options.afterId ?? 0, options.limit ?? 1000));
  }

  async beginLoopRun(r: LoopRunStart): Promise<{ status: RunStatus; created: boolean }> {
    const now = this.now();
    return this.tx(() => beginLoopRunIn((sql) => this.prepared(sql), r, now));
  }

  async endLoopRun(r: LoopRunEnd): Promise<RunStatus | null> {
    const now = this.now();
    return this.tx(() => endLoopRunIn((sql) => this.prepared(sql), r, now));
  }

  async seedDemo(options: SeedOptions, onProgress?: (done: number, total: number) => void): Promise<SeedReport> {
    return seedSqlite(this.db, options, this.now(), onProgress);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  /** Phase 1 inside a transaction the caller holds: claim() on its own, or commit() for the next key. */
  private claimIn(r: ClaimRequest, now: number): ClaimOutcome {
    const done = this.s.committed.get(r.idemKey);
    if (done) return { kind: 'committed', row: done };
    const leaseExpiresAt = now + r.leaseMs / 1000;
    const held = this.s.claim.get(r.idemKey);
    if (!held) {
      this.s.insertClaim.run(r.idemKey, r.runId, now, r.token, r.workerId, leaseExpiresAt, now, r.step, r.attempt);
      return { kind: 'claimed', attempt: r.attempt, leaseExpiresAt, tookOverFrom: null };
    }
    if (held.token === r.token) {
      // Our own claim, taken ahead by the previous step's commit.
      this.s.renew.run({ idemKey: r.idemKey, token: r.token, now, leaseExpiresAt });
      return { kind: 'claimed', attempt: held.attempt, leaseExpiresAt, tookOverFrom: null };
    }
    const expiry = expiresAt(held, r.claimTtlMs);
    const holder: ClaimRow = { ...held, orphaned: expiry <= now };
    if (!holder.orphaned) return { kind: 'held', holder, msUntilExpiry: (expiry - now) * 1000 };
    const attempt = Math.max(r.attempt, held.attempt + 1);
    this.s.takeOver.run(r.runId, now, r.token, r.workerId, leaseExpiresAt, now, r.step, attempt, r.idemKey);
    this.event({ runId: held.runId, idemKey: r.idemKey, step: held.step, outcome: 'expired', workerId: r.workerId,
      detail: `lease of ${held.workerId ?? 'an outside client'} passed; taken over` }, now);
    return { kind: 'claimed', attempt, leaseExpiresAt, tookOverFrom: holder };
  }

  private runStatusOf(runId: string): RunStatus | null {
    return this.s.runStatus.get(runId)?.status ?? null;
  }

  private writeProgress(w: ProgressWrite, now: number): void {
    this.s.upsertProgress.run(w.runId, w.step, w.stateJson, now, w.executed, w.skipped, w.awaited, w.saveMs ?? null);
    if (w.skipped > 0) this.event({ runId: w.runId, step: w.step, outcome: 'skipped', count: w.skipped }, now);
    if (w.awaited > 0) this.event({ runId: w.runId, step: w.step, outcome: 'awaited', count: w.awaited }, now);
  }

}

/** Throws if the operator may not resolve this claim now: it is not the attempt they saw, or its lease is live. */
function refuseResolve(r: ResolveRequest, held: RawClaim, now: number): void {
  if (r.attempt !== undefined && held.attempt !== r.attempt) {
    throw new ClaimNotOrphanedError(r.idemKey, 'replaced', `was taken over since (attempt ${held.attempt}, not ${r.attempt})`);
  }
  if (expiresAt(held, r.claimTtlMs) > now && !r.force) {
    throw new ClaimNotOrphanedError(r.idemKey, 'live', 'has a live lease (its holder may be executing it)');
  }
}

/** When a claim stops protecting its key: its lease, or for an outside client's claim (no lease) claimed_at + TTL. */
function expiresAt(held: RawClaim, claimTtlMs: number): number {
  return held.leaseExpiresAt ?? held.claimedAt + claimTtlMs / 1000;
}
