/**
 * Claims, committed rows and the timeline on PostgreSQL, with sqlite/claims.ts's semantics, and an operator's
 * two answers to a claim in doubt. Expire and resolve are one statement each, judged on the newest row
 * version by the database's clock: a takeover committed meanwhile makes the DELETE re-check that version,
 * whose lease is live and attempt higher, so it deletes nothing.
 */
import { and, asc, eq, gt, type SQL, sql } from 'drizzle-orm';
import { ClaimNotOrphanedError, LeaseLostError, NotFoundError } from '../../errors';
import type { ClaimRow, ClaimStore, CommittedRow, StepEvent } from '../contract';
import { claims, committed, stepEvents } from '../schema/pg';
import { claimExpiresAtSql, claimTimes } from '../shared/claim-expiry-sql';
import { committedCountSql } from '../shared/run-counts';
import { CLAIM as CLAIM_LIST, committedByKey, committedSelect, names } from './columns';
import type { PgConnection } from './connection';
import { mayHaveRun, withRetry } from './retry';

/** When a claim expires (lib/store/shared/claim-expiry-sql), the TTL bound as PostgreSQL's float8. */
const expiresAt = (ttlS: number, alias = '') => claimExpiresAtSql(claimTimes(alias), sql`${ttlS}::float8`);

const CLAIM = sql.raw(CLAIM_LIST);

/** RESOLVE's answer: `seen` is null when the statement's snapshot held no claim on the key. */
type ResolveRow = {
  inserted: number;
  runId: string | null;
  seen: { attempt: number; orphaned: boolean } | null;
  committedSeen: boolean;
};

export function postgresClaims(c: PgConnection): ClaimStore {
  const read = <T>(what: string, fn: () => Promise<T>) => withRetry(what, fn);

  return {
    async countCommitted(runId) {
      // The progress row's kept count, or a count where it has none (shared/run-counts.ts).
      const { rows } = await read('countCommitted', () =>
        c.query<{ n: number }>(sql`SELECT ${sql.raw(committedCountSql('postgres', 'r.id', 'p'))} AS n
          FROM (SELECT ${runId}::text AS id) r LEFT JOIN progress p ON p.run_id = r.id`),
      );
      return rows[0]!.n;
    },

    async runFootprint(runId) {
      const { rows } = await read('runFootprint', () =>
        c.query<{ keys: number; bytes: number }>(sql`SELECT
          ((SELECT count(*) FROM ${committed} WHERE run_id = ${runId}::text)
            + (SELECT count(*) FROM ${claims} WHERE run_id = ${runId}::text))::float8 AS keys,
          ((SELECT coalesce(sum(octet_length(result_json) + coalesce(octet_length(input_json), 0)), 0)
            FROM ${committed} WHERE run_id = ${runId}::text)
            + coalesce((SELECT octet_length(state_json) FROM progress WHERE run_id = ${runId}::text), 0))::float8 AS bytes`),
      );
      return rows[0]!;
    },

    /**
     * Keyset on (step, key), the cursor being the last key seen (its step looked up by primary key), as on
     * SQLite. Keys compare in byte order (COLLATE "C"), as SQLite compares them, so both backends page alike.
     * The first page and a later one are two texts: a plan kept for one text with the cursor possibly NULL
     * would filter from the run's first row instead of seeking past the cursor.
     */
    async listCommitted(runId, options = {}): Promise<CommittedRow[]> {
      const after =
        options.afterKey == null
          ? sql``
          : sql`AND (coalesce(step, -1), idem_key COLLATE "C") >
          (SELECT coalesce(step, -1), idem_key COLLATE "C" FROM ${committed} WHERE idem_key = ${options.afterKey}::text)`;
      return (
        await c.read<CommittedRow>(
          'listCommitted',
          sql`SELECT ${committedSelect} FROM ${committed}
        WHERE run_id = ${runId} ${after}
        ORDER BY coalesce(step, -1), idem_key COLLATE "C" LIMIT ${options.limit ?? 1000}::int`,
        )
      ).rows;
    },

    async listClaims(options) {
      const ttl = (options?.claimTtlMs ?? 0) / 1000;
      const after = options?.after;
      const where: SQL[] = [];
      if (options?.runId !== undefined) where.push(sql`run_id = ${options.runId}`);
      if (options?.orphanedOnly) where.push(sql`${expiresAt(ttl)} <= t.now`);
      if (after) {
        where.push(sql`(claimed_at > ${after.claimedAt}::float8
          OR (claimed_at = ${after.claimedAt}::float8 AND idem_key COLLATE "C" > ${after.idemKey}::text COLLATE "C"))`);
      }
      return (
        await c.read<ClaimRow>(
          'listClaims',
          sql`SELECT ${CLAIM}, ${expiresAt(ttl)} <= t.now AS orphaned
        FROM ${claims}, (SELECT ${c.now()} AS now) t
        ${where.length > 0 ? sql`WHERE ${sql.join(where, sql` AND `)}` : sql``}
        ORDER BY claimed_at, idem_key COLLATE "C" LIMIT ${options?.limit ?? null}::int`,
        )
      ).rows;
    },

    async getClaim(idemKey, options) {
      const { rows } = await c.query<ClaimRow>(
        sql`SELECT ${CLAIM}, ${expiresAt(options.claimTtlMs / 1000)} <= t.now AS orphaned
        FROM ${claims}, (SELECT ${c.now()} AS now) t WHERE ${claims.idemKey} = ${idemKey}`,
        'waybill_get_claim',
      );
      return rows[0] ?? null;
    },

    /** Deleted only if orphaned (or forced), judged on the newest row version. */
    async expireClaim(idemKey, options) {
      const key = sql`${idemKey}::text`;
      const { rows } = await c.query<{ n: number; claimSeen: boolean }>(sql`WITH t AS (SELECT ${c.now()} AS now),
        del AS (DELETE FROM ${claims} c USING t WHERE c.idem_key = ${key}
            AND (${options.force ?? false}::boolean OR ${expiresAt(options.claimTtlMs / 1000, 'c.')} <= t.now)
          RETURNING c.run_id, c.step, c.worker_id, c.attempt),
        ev AS (INSERT INTO ${stepEvents} (run_id, idem_key, step, outcome, count, worker_id, detail, at, attempt)
          SELECT del.run_id, ${key}, del.step, 'expired', 1, del.worker_id,
            'expired by ' || ${options.actor}::text || ': the step will run again', t.now, del.attempt FROM del, t)
        SELECT (SELECT count(*) FROM del)::int AS n, EXISTS (SELECT 1 FROM ${claims} WHERE idem_key = ${key}) AS "claimSeen"`);
      // The statement's snapshot still shows the row it deleted, so claimSeen means "there was a claim".
      return rows[0]!.n === 1 ? 'expired' : rows[0]!.claimSeen ? 'live' : 'missing';
    },

    /**
     * The claim is deleted only if it is orphaned by the database's clock (or forced), is the attempt the
     * operator saw (when given), and the key is uncommitted; the manual result is inserted only if the delete
     * hit, so the holder (whose token is gone) cannot commit after. `seen` is the claim in the statement's
     * snapshot, for saying why not.
     */
    async resolveClaim(r) {
      let outcomeUnknown = false;
      const key = sql`${r.idemKey}::text`;
      const attempt = sql`${r.attempt ?? null}::int`;
      const ttl = r.claimTtlMs / 1000;
      const detail = `resolved by ${r.actor}${r.note ? `: ${r.note}` : ''}`;
      const statement = sql`WITH t AS (SELECT ${c.now()} AS now),
        del AS (DELETE FROM ${claims} c USING t WHERE c.idem_key = ${key}
            AND (${r.force ?? false}::boolean OR ${expiresAt(ttl, 'c.')} <= t.now) AND (${attempt} IS NULL OR c.attempt = ${attempt})
            AND NOT EXISTS (SELECT 1 FROM ${committed} WHERE idem_key = ${key})
          RETURNING c.run_id, c.step, c.worker_id),
        ins AS (INSERT INTO ${committed} (${names(
          committed.idemKey,
          committed.runId,
          committed.resultJson,
          committed.committedAt,
          committed.step,
          committed.fingerprint,
          committed.workerId,
          committed.durationMs,
          committed.source,
        )})
          SELECT ${key}, del.run_id, ${r.resultJson}::text, t.now, del.step, NULL, NULL, NULL, 'manual' FROM del, t
          ON CONFLICT (idem_key) DO NOTHING RETURNING 1),
        ev AS (INSERT INTO ${stepEvents} (run_id, idem_key, step, outcome, count, worker_id, detail, at)
          SELECT del.run_id, ${key}, del.step, 'resolved', 1, del.worker_id, ${detail}::text, t.now FROM del, t
          WHERE EXISTS (SELECT 1 FROM ins))
        SELECT (SELECT count(*) FROM ins)::int AS inserted, (SELECT run_id FROM del) AS "runId",
          (SELECT json_build_object('attempt', c.attempt, 'orphaned', ${expiresAt(ttl, 'c.')} <= t.now)
            FROM ${claims} c, t WHERE c.idem_key = ${key}) AS seen,
          EXISTS (SELECT 1 FROM ${committed} WHERE idem_key = ${key}) AS "committedSeen"`;
      const row = await withRetry('resolve', async () => (await c.once<ResolveRow>(statement)).rows[0]!, {
        onTransient: (error) => {
          outcomeUnknown ||= mayHaveRun(error);
        },
      });
      if (row.inserted === 1) return { runId: row.runId! };
      if (!row.seen) {
        // The same rule as commit: after a lost connection, our own manual row means the first try landed.
        const done = outcomeUnknown ? await getCommitted(c, r.idemKey) : null;
        if (done?.source === 'manual' && done.resultJson === r.resultJson) return { runId: done.runId };
        throw new NotFoundError(`claim on ${r.idemKey}`);
      }
      if (row.committedSeen) throw new LeaseLostError(r.idemKey, 'the key is already committed');
      if (r.attempt !== undefined && row.seen.attempt !== r.attempt) {
        throw new ClaimNotOrphanedError(
          r.idemKey,
          'replaced',
          `was taken over since (attempt ${row.seen.attempt}, not ${r.attempt})`,
        );
      }
      if (!row.seen.orphaned && !r.force) {
        throw new ClaimNotOrphanedError(r.idemKey, 'live', 'has a live lease (its holder may be executing it)');
      }
      // The snapshot showed the claim resolvable, but its newest version was not: a takeover landed meanwhile.
      throw new ClaimNotOrphanedError(r.idemKey, 'replaced', 'was taken over while it was being resolved');
    },

    async listEvents(runId, options = {}): Promise<StepEvent[]> {
      return read('listEvents', () =>
        c.orm
          .select()
          .from(stepEvents)
          .where(and(eq(stepEvents.runId, runId), gt(stepEvents.id, options.afterId ?? 0)))
          .orderBy(asc(stepEvents.id))
          .limit(options.limit ?? 1000),
      );
    },
  };
}

async function getCommitted(c: PgConnection, idemKey: string): Promise<CommittedRow | null> {
  const { rows } = await c.query<CommittedRow>(committedByKey(idemKey), 'waybill_committed');
  return rows[0] ?? null;
}
