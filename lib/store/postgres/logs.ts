/**
 * Run logs on PostgreSQL, mirroring sqlite/logs.ts. An append is one transaction that first takes a
 * transaction-scoped advisory lock per run it writes (in id order, so two appenders never deadlock): two
 * workers printing into one run at once (a takeover, while the old program is being stopped) take turns, so
 * each reads the run's last seq after the other committed. Seqs then appear in commit order, and a follower
 * asking for the lines after seq n never skips one committed later with a smaller seq.
 *
 * A batch whose connection is lost is retried whole: if the lost attempt had committed, its lines are there
 * twice (under new seqs). A log line is for people; this is the one duplicate it can have.
 */

import type { LogStore, RunLogRow } from '../contract';
import { boundLogLine, checkLogKeep, groupByRun } from '../shared/log-lines';
import { LOG } from './columns';
import type { PgConnection } from './connection';
import { withRetry } from './retry';

/** 'WYLG': the advisory locks of run logs, apart from the workers' liveness locks (workers.ts). */
const RUN_LOGS_LOCK = 0x57594c47;

export function postgresLogs(c: PgConnection): LogStore {
  return {
    async appendRunLogs(lines, options) {
      const keep = checkLogKeep(options.keep);
      if (lines.length === 0) return;
      const runs = [...groupByRun(lines)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      await withRetry('appendRunLogs', () =>
        c.inTransaction(async (client) => {
          for (const [runId] of runs)
            await client.query(
              `SELECT pg_advisory_xact_lock(${RUN_LOGS_LOCK}, hashtext(current_schema() || ':' || $1))`,
              [runId],
            );
          for (const [runId, own] of runs) {
            const { rows } = await client.query<{ last: string }>(
              'SELECT coalesce(max(seq), 0) AS last FROM run_logs WHERE run_id = $1',
              [runId],
            );
            const last = Number(rows[0]!.last);
            // Lines older than the newest `keep` would be deleted at once: they only take their seqs.
            const skipped = Math.max(0, own.length - keep);
            const kept = own.slice(skipped);
            await client.query(
              `INSERT INTO run_logs (run_id, seq, at, stream, line, worker_id, attempt)
              SELECT $1, $2::bigint + x.n, x.at, x.stream, x.line, x.worker_id, x.attempt
              FROM unnest($3::float8[], $4::text[], $5::text[], $6::text[], $7::int[])
                WITH ORDINALITY AS x (at, stream, line, worker_id, attempt, n)`,
              [
                runId,
                last + skipped,
                kept.map((l) => l.at),
                kept.map((l) => l.stream),
                kept.map((l) => boundLogLine(l.line)),
                kept.map((l) => l.workerId ?? null),
                kept.map((l) => l.attempt ?? null),
              ],
            );
            const newest = last + own.length;
            if (newest > keep)
              await client.query('DELETE FROM run_logs WHERE run_id = $1 AND seq <= $2', [runId, newest - keep]);
          }
        }),
      );
    },

    async readRunLogs(runId, options) {
      const { rows } = await withRetry('readRunLogs', () =>
        options.afterSeq !== undefined
          ? c.pool.query<RunLogRow>({
              name: 'waybill_run_logs_after',
              text: `SELECT ${LOG} FROM run_logs WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
              values: [runId, options.afterSeq, options.limit],
            })
          : c.pool.query<RunLogRow>({
              name: 'waybill_run_logs_tail',
              text: `SELECT ${LOG} FROM (SELECT * FROM run_logs WHERE run_id = $1 ORDER BY seq DESC LIMIT $2) t ORDER BY seq`,
              values: [runId, options.limit],
            }),
      );
      // bigint comes back as text from node-postgres: seqs stay far below 2^53.
      return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
    },
  };
}
