/**
 * Claims, committed rows and the timeline on SQLite, as the control plane reads them, and an operator's two
 * answers to a claim in doubt (expire it, or resolve it by hand). The plain reads go through Drizzle's query
 * builder; expire and resolve decide under the write lock, so no takeover can land between the look and the
 * delete.
 */
import { and, asc, eq, getTableColumns, gt, type SQL, sql } from 'drizzle-orm';
import { ClaimNotOrphanedError, LeaseLostError, NotFoundError } from '../../errors';
import type { ClaimRow, ClaimStore, CommittedRow, ResolveRequest } from '../contract';
import { claims, stepEvents } from '../schema/sqlite';
import { claimExpiredSql } from '../shared/claim-expiry-sql';
import { committedCountSql } from '../shared/run-counts';
import { COMMITTED } from './columns';
import { committedRun, runRowsInOrder } from './committed-rows';
import { guard, type SqliteConnection } from './connection';
import { statement } from './statement';
import { claimByKey, expiresAt, insertCommitted, type RawClaim } from './steps';

/** Whether a claim has expired by `now` (lib/store/shared/claim-expiry-sql), as SQLite's 0 or 1. */
const orphanedAt = (now: number, ttlS: number): SQL<number> => claimExpiredSql(claims, ttlS, now) as SQL<number>;

// length() of a BLOB counts bytes; of TEXT, characters. Each count is an index range on run_id.
/** The run's committed rows: its progress row's kept count, or a count where it has none (shared/run-counts.ts). */
const committedCount = statement<{ runId: string }, { n: number }>(`SELECT
  ${committedCountSql('sqlite', '@runId', 'p')} AS n FROM (SELECT 1) LEFT JOIN progress p ON p.run_id = @runId`);

const footprint = statement<{ runId: string }, { keys: number; bytes: number }>(`SELECT
  (SELECT count(*) FROM committed WHERE ${committedRun('= @runId')})
    + (SELECT count(*) FROM claims WHERE run_id = @runId) AS keys,
  (SELECT coalesce(sum(length(CAST(result_json AS BLOB)) + coalesce(length(CAST(input_json AS BLOB)), 0)), 0)
    FROM committed WHERE ${committedRun('= @runId')})
  + coalesce((SELECT length(CAST(state_json AS BLOB)) FROM progress WHERE run_id = @runId), 0) AS bytes`);

/**
 * Keyset on (step, key), keyless rows first, the order both run indexes hold them in (SQLite sorts NULL lowest).
 * The first page is the run's start of it; a later one starts after the last key seen, its step looked up by
 * primary key (a key not found reads nothing), as two seeks: the keyless rows after a keyless cursor, then the
 * stepped rows after the cursor, a row-value range that NULL never satisfies (from the lowest integer after a
 * keyless cursor, so no negative step is skipped).
 */
const page = (where?: string) =>
  runRowsInOrder({ columns: COMMITTED, id: '@runId', where, order: 'step, idemKey', limit: '@limit' });
export const firstCommittedPage = statement<{ runId: string; limit: number }, CommittedRow>(page());
export const committedPageAfter = statement<{ runId: string; afterKey: string; limit: number }, CommittedRow>(`
  SELECT * FROM (${page('step IS NULL AND idem_key > (SELECT idem_key FROM committed WHERE idem_key = @afterKey AND step IS NULL)')})
  UNION ALL
  SELECT * FROM (${page('(step, idem_key) > (SELECT coalesce(step, -9223372036854775808), idem_key FROM committed WHERE idem_key = @afterKey)')})
  ORDER BY step, idemKey LIMIT @limit`);

const deleteClaim = statement<{ idemKey: string }>('DELETE FROM claims WHERE idem_key = @idemKey');

const withOrphaned = ({ orphaned, ...row }: RawClaim & { orphaned: number }): ClaimRow => ({
  ...row,
  orphaned: orphaned === 1,
});

export function sqliteClaims(c: SqliteConnection): ClaimStore {
  const { orm } = c;
  const claimRow = getTableColumns(claims);

  return {
    async countCommitted(runId) {
      return guard(() => committedCount.on(c.db).get({ runId })!.n);
    },

    async runFootprint(runId) {
      return guard(() => footprint.on(c.db).get({ runId })!);
    },

    async listCommitted(runId, options = {}): Promise<CommittedRow[]> {
      const limit = options.limit ?? 1000;
      return guard(() =>
        options.afterKey == null
          ? firstCommittedPage.on(c.db).all({ runId, limit })
          : committedPageAfter.on(c.db).all({ runId, afterKey: options.afterKey, limit }),
      );
    },

    async listClaims(options) {
      const now = c.now();
      const orphaned = orphanedAt(now, (options?.claimTtlMs ?? 0) / 1000);
      const after = options?.after;
      return guard(() =>
        orm
          .select({ ...claimRow, orphaned })
          .from(claims)
          .where(
            and(
              options?.runId === undefined ? undefined : eq(claims.runId, options.runId),
              options?.orphanedOnly ? orphaned : undefined,
              after
                ? sql`(${claims.claimedAt}, ${claims.idemKey}) > (${after.claimedAt}, ${after.idemKey})`
                : undefined,
            ),
          )
          .orderBy(asc(claims.claimedAt), asc(claims.idemKey))
          .limit(options?.limit ?? -1)
          .all()
          .map(withOrphaned),
      );
    },

    async getClaim(idemKey, options) {
      const row = guard(() =>
        orm
          .select({ ...claimRow, orphaned: orphanedAt(c.now(), options.claimTtlMs / 1000) })
          .from(claims)
          .where(eq(claims.idemKey, idemKey))
          .get(),
      );
      return row ? withOrphaned(row) : null;
    },

    async expireClaim(idemKey, options) {
      const now = c.now();
      return c.tx(() => {
        const held = claimByKey.on(c.db).get({ idemKey });
        if (!held) return 'missing';
        if (expiresAt(held, options.claimTtlMs) > now && !options.force) return 'live';
        deleteClaim.on(c.db).run({ idemKey });
        c.event(
          {
            runId: held.runId,
            idemKey,
            step: held.step,
            outcome: 'expired',
            workerId: held.workerId,
            detail: `expired by ${options.actor}: the step will run again`,
            attempt: held.attempt,
          },
          now,
        );
        return 'expired';
      });
    },

    async resolveClaim(r) {
      const now = c.now();
      return c.tx(() => {
        const held = claimByKey.on(c.db).get({ idemKey: r.idemKey });
        if (!held) throw new NotFoundError(`claim on ${r.idemKey}`);
        // Decided under the write lock, as expireClaim decides: no takeover can land between this and the delete.
        refuseResolve(r, held, now);
        deleteClaim.on(c.db).run({ idemKey: r.idemKey });
        const inserted = insertCommitted.on(c.db).run({
          idemKey: r.idemKey,
          runId: held.runId,
          resultJson: r.resultJson,
          committedAt: now,
          step: held.step,
          fingerprint: null,
          workerId: null,
          durationMs: null,
          source: 'manual',
          inputJson: null,
        });
        if (inserted.changes === 0) throw new LeaseLostError(r.idemKey, 'the key is already committed');
        c.event(
          {
            runId: held.runId,
            idemKey: r.idemKey,
            step: held.step,
            outcome: 'resolved',
            workerId: held.workerId,
            detail: `resolved by ${r.actor}${r.note ? `: ${r.note}` : ''}`,
          },
          now,
        );
        return { runId: held.runId };
      });
    },

    async listEvents(runId, options = {}) {
      return guard(() =>
        orm
          .select()
          .from(stepEvents)
          .where(and(eq(stepEvents.runId, runId), gt(stepEvents.id, options.afterId ?? 0)))
          .orderBy(asc(stepEvents.id))
          .limit(options.limit ?? 1000)
          .all(),
      );
    },
  };
}

/** Throws if the operator may not resolve this claim now: it is not the attempt they saw, or its lease is live. */
function refuseResolve(r: ResolveRequest, held: RawClaim, now: number): void {
  if (r.attempt !== undefined && held.attempt !== r.attempt) {
    throw new ClaimNotOrphanedError(
      r.idemKey,
      'replaced',
      `was taken over since (attempt ${held.attempt}, not ${r.attempt})`,
    );
  }
  if (expiresAt(held, r.claimTtlMs) > now && !r.force) {
    throw new ClaimNotOrphanedError(r.idemKey, 'live', 'has a live lease (its holder may be executing it)');
  }
}
