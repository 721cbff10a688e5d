/**
 * progress.committed_count on PostgreSQL: a run's committed rows, kept where they are added and removed, so the
 * runs list reads a number instead of counting a 100,000-step run's index range (shared/run-counts.ts).
 *
 * The hot path keeps it itself: waybill_commit (functions/commit.ts) adds one in the progress write it makes
 * anyway, or by a lone UPDATE when the commit carries no progress, and marks its insert with the transaction's
 * `waybill.counted` setting, which it clears again in its next statement. A trigger would cost each step a
 * trigger call and a second version of the progress row.
 *
 * Every other writer is counted by the triggers (the schema's: drizzle/pg/0034_committed_count.sql, and 0036 that
 * put the three on committed on one function): a rerun's or a fork's rows, retention, rows written by hand or by an
 * outside client. Statement-level, over the statement's transition tables, so a bulk insert or delete updates each
 * run's progress row once. A progress row made after its run's rows counts them once.
 *
 * A trigger runs for whoever writes, with the writer's search_path, which need not lead to the store's schema
 * (an operator's psql naming schema.committed): each names its tables in the schema of the table that fired it,
 * by dynamic SQL. The moved store (postgres/move.ts) takes its triggers along and stays right.
 *
 * One race is left open: a progress row made while another transaction, not yet committed, adds rows to the same
 * run counts without them, and that transaction's count finds no row to add to. A run's rows come from one
 * execution at a time (the run fence), and its first progress write is in the same transaction as its first
 * commit, so Waybill's own writers never race so; two outside clients writing one run at once could.
 */
import { LONE_ADDED, LONE_REMOVED } from './lone-runs';

/**
 * One function for the three triggers on committed (an insert's `added` rows, a delete's `removed`, an update's
 * both): each row is +1 to its run or -1, summed by run. An UPDATE that moves rows between runs subtracts where
 * they left and adds where they arrived; one that leaves run_id alone sums to nothing and writes no progress row.
 * Only the rows' source depends on the operation: a transition table the trigger did not declare cannot be named.
 */
export const COMMITTED_CHANGED_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_committed_changed()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I.progress p SET committed_count = p.committed_count + d.n
    FROM (SELECT run_id, sum(n)::int AS n FROM (%s) x GROUP BY run_id HAVING sum(n) <> 0) d
    WHERE p.run_id = d.run_id', TG_TABLE_SCHEMA, CASE TG_OP
      WHEN 'INSERT' THEN 'SELECT run_id, 1 AS n FROM added'
      WHEN 'DELETE' THEN 'SELECT run_id, -1 AS n FROM removed'
      ELSE 'SELECT run_id, -1 AS n FROM removed UNION ALL SELECT run_id, 1 FROM added' END);
  -- lone_runs (lone-runs.ts): the runs whose last row left, then the runs that arrived without a runs or progress row.
  IF TG_OP <> 'INSERT' THEN
    EXECUTE format('${LONE_REMOVED('removed')}', TG_TABLE_SCHEMA);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    EXECUTE format('${LONE_ADDED('added')}', TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END
$$`;

export const PROGRESS_COUNTED_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_progress_counted()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %1$I.progress p SET committed_count = (SELECT count(*) FROM %1$I.committed c WHERE c.run_id = $1)
    WHERE p.run_id = $1', TG_TABLE_SCHEMA) USING NEW.run_id;
  -- A run with a progress row is not lone (lone-runs.ts).
  EXECUTE format('DELETE FROM %I.lone_runs WHERE run_id = $1', TG_TABLE_SCHEMA) USING NEW.run_id;
  RETURN NULL;
END
$$`;

/** The setting waybill_commit marks its own insert with: the insert trigger leaves that one to it. */
export const COUNTED_SETTING = 'waybill.counted';
