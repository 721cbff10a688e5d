/**
 * Run logs on SQLite (contract/logs.ts). An append is one BEGIN IMMEDIATE transaction: the write lock serializes
 * appenders, so each run's next seq is read and taken under it, and the lines past the run's keep are deleted by
 * one range on the key before the lock goes.
 */
import { and, asc, desc, eq, gt, lte, max } from 'drizzle-orm';
import type { LogStore, RunLogInput, RunLogRow } from '../contract';
import { runLogs } from '../schema/sqlite';
import { boundLogLine, checkLogKeep, groupByRun } from '../shared/log-lines';
import { guard, type SqliteConnection } from './connection';

/** Rows per INSERT: 7 values each, well inside SQLite's bound on a statement's variables. */
const CHUNK = 500;

export function sqliteLogs(c: SqliteConnection): LogStore {
  const { orm } = c;
  return {
    async appendRunLogs(lines, options) {
      const keep = checkLogKeep(options.keep);
      if (lines.length === 0) return;
      c.tx(() => {
        for (const [runId, own] of groupByRun(lines)) {
          const last =
            orm
              .select({ seq: max(runLogs.seq) })
              .from(runLogs)
              .where(eq(runLogs.runId, runId))
              .get()?.seq ?? 0;
          // Lines older than the newest `keep` would be deleted at once: they only take their seqs.
          const skipped = Math.max(0, own.length - keep);
          const rows = own.slice(skipped).map((line: RunLogInput, i) => ({
            runId,
            seq: last + skipped + i + 1,
            at: line.at,
            stream: line.stream,
            line: boundLogLine(line.line),
            workerId: line.workerId ?? null,
            attempt: line.attempt ?? null,
          }));
          for (let i = 0; i < rows.length; i += CHUNK)
            orm
              .insert(runLogs)
              .values(rows.slice(i, i + CHUNK))
              .run();
          const newest = last + own.length;
          if (newest > keep)
            orm
              .delete(runLogs)
              .where(and(eq(runLogs.runId, runId), lte(runLogs.seq, newest - keep)))
              .run();
        }
      });
    },

    async readRunLogs(runId, options) {
      return guard((): RunLogRow[] => {
        if (options.afterSeq !== undefined)
          return orm
            .select()
            .from(runLogs)
            .where(and(eq(runLogs.runId, runId), gt(runLogs.seq, options.afterSeq)))
            .orderBy(asc(runLogs.seq))
            .limit(options.limit)
            .all();
        return orm
          .select()
          .from(runLogs)
          .where(eq(runLogs.runId, runId))
          .orderBy(desc(runLogs.seq))
          .limit(options.limit)
          .all()
          .reverse();
      });
    },
  };
}
