/**
 * lone_runs on PostgreSQL: the runs with committed rows and neither a runs row nor a progress row, each with its
 * latest commit, so the runs list reads its `idle` outside runs newest first from lone_runs_at instead of every
 * commit since its page's floor (drizzle/pg/0038_lone_runs.sql says what that cost).
 *
 * Kept where rows change, as committed_count is (committed-count.ts): waybill_commit records its own commit
 * when its run has neither row (`recordLoneOurs`); the committed triggers' function adds the inserts and removes
 * the runs whose last row was deleted for every other writer; a progress row made takes its run out
 * (waybill_progress_counted); and the row triggers below take a run out when its runs row is made, and put it
 * back when its runs or progress row is deleted while committed rows remain.
 */

/** Our commit of request `q` recorded when its run has no runs row (`status`: the run's, null without one). */
export const recordLoneOurs = (q: string, status: string) => `IF ${status} IS NULL THEN
        INSERT INTO lone_runs (run_id, at) SELECT c.run_id, c.committed_at FROM committed c
          WHERE c.idem_key = ${q}.key AND NOT EXISTS (SELECT 1 FROM progress lp WHERE lp.run_id = c.run_id)
        ON CONFLICT (run_id) DO UPDATE SET at = excluded.at WHERE excluded.at > lone_runs.at;
      END IF`;

/** The runs of the transition table `rows` that have neither row, each at its latest commit among them. */
export const LONE_ADDED = (rows: string) => `INSERT INTO %1$I.lone_runs (run_id, at)
    SELECT a.run_id, max(a.committed_at) FROM ${rows} a
    WHERE NOT EXISTS (SELECT 1 FROM %1$I.progress p WHERE p.run_id = a.run_id)
      AND NOT EXISTS (SELECT 1 FROM %1$I.runs r WHERE r.id = a.run_id)
    GROUP BY a.run_id
    ON CONFLICT (run_id) DO UPDATE SET at = excluded.at WHERE excluded.at > lone_runs.at`;

/** The runs of the transition table `rows` that no longer have a committed row. */
export const LONE_REMOVED = (rows: string) => `DELETE FROM %1$I.lone_runs l
    WHERE l.run_id IN (SELECT run_id FROM ${rows})
      AND NOT EXISTS (SELECT 1 FROM %1$I.committed c WHERE c.run_id = l.run_id)`;

export const LONE_RUNS_ROW_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_lone_runs_row()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE format('DELETE FROM %I.lone_runs WHERE run_id = $1', TG_TABLE_SCHEMA) USING NEW.id;
  ELSE
    EXECUTE format('INSERT INTO %1$I.lone_runs (run_id, at)
      SELECT $1, max(c.committed_at) FROM %1$I.committed c WHERE c.run_id = $1
        AND NOT EXISTS (SELECT 1 FROM %1$I.runs r WHERE r.id = $1)
        AND NOT EXISTS (SELECT 1 FROM %1$I.progress p WHERE p.run_id = $1)
      HAVING max(c.committed_at) IS NOT NULL
      ON CONFLICT (run_id) DO NOTHING', TG_TABLE_SCHEMA)
      -- A field the other table lacks cannot be named in either branch: each is read from the row as JSON.
      USING to_jsonb(OLD)->>(CASE TG_TABLE_NAME WHEN 'runs' THEN 'id' ELSE 'run_id' END);
  END IF;
  RETURN NULL;
END
$$`;
