-- Runs with committed rows and neither a runs row nor a progress row, each with its latest commit (lone_runs): the
-- runs list read every commit since its page's floor to find them, or every run of the store when the page was
-- short (drizzle/sqlite/0031_lone_runs.sql has the figures). Counted once here; from here on waybill_commit records
-- its own commits, and the committed triggers' function, waybill_progress_counted and the row triggers below keep
-- it for every other writer (lib/store/postgres/functions/lone-runs.ts, where their current texts live; this is
-- waybill_lone_runs_row's first).
CREATE TABLE "lone_runs" (
	"run_id" text PRIMARY KEY NOT NULL,
	"at" double precision NOT NULL
);
--> statement-breakpoint
CREATE INDEX "lone_runs_at" ON "lone_runs" USING btree ("at","run_id");--> statement-breakpoint
INSERT INTO "lone_runs" ("run_id", "at")
  SELECT c."run_id", max(c."committed_at") FROM "committed" c
  WHERE NOT EXISTS (SELECT 1 FROM "runs" r WHERE r."id" = c."run_id")
    AND NOT EXISTS (SELECT 1 FROM "progress" p WHERE p."run_id" = c."run_id")
  GROUP BY c."run_id";--> statement-breakpoint
CREATE OR REPLACE FUNCTION waybill_lone_runs_row()
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
$$
;
--> statement-breakpoint
CREATE TRIGGER lone_runs_run AFTER INSERT OR DELETE ON runs
  FOR EACH ROW EXECUTE FUNCTION waybill_lone_runs_row();--> statement-breakpoint
CREATE TRIGGER lone_runs_progress_gone AFTER DELETE ON progress
  FOR EACH ROW EXECUTE FUNCTION waybill_lone_runs_row();
