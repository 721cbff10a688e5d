-- A run's earlier starts. A rate limit counts the starts within its period from runs.started_at, which a retry or a
-- rerun clears so that the run's next start counts: the start it cleared then stopped counting, and a run failed
-- and retried within one period started twice in that window while the pick counted once (a bulk retry of fifty
-- runs that had failed at once let fifty more start in the same minute). The trigger keeps the cleared start here
-- for every writer while a window may still hold it: a day, the longest period (PERIOD_MAX_MS in
-- lib/domain/run-limits.ts), judged by the clearing row's updated_at, the writer's clock; older rows of the
-- workflow go as a newer one comes. The pick counts these beside runs_started (lib/store/shared/run-limits-sql.ts).
-- waybill_earlier_start's current text lives in lib/store/postgres/functions/earlier-starts.ts; this is its first.
CREATE TABLE "earlier_starts" (
	"run_id" text NOT NULL,
	"workflow" text NOT NULL,
	"started_at" double precision NOT NULL
);
--> statement-breakpoint
CREATE INDEX "earlier_starts_workflow" ON "earlier_starts" USING btree ("workflow","started_at");--> statement-breakpoint
CREATE OR REPLACE FUNCTION waybill_earlier_start()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM %I.earlier_starts WHERE workflow = $1 AND started_at <= $2 - 86400', TG_TABLE_SCHEMA)
    USING OLD.workflow, NEW.updated_at;
  IF OLD.started_at > NEW.updated_at - 86400 THEN
    EXECUTE format('INSERT INTO %I.earlier_starts (run_id, workflow, started_at) VALUES ($1, $2, $3)', TG_TABLE_SCHEMA)
      USING OLD.id, OLD.workflow, OLD.started_at;
  END IF;
  RETURN NULL;
END
$$
;
--> statement-breakpoint
CREATE TRIGGER earlier_starts_kept AFTER UPDATE OF started_at ON runs
  FOR EACH ROW WHEN (OLD.started_at IS NOT NULL AND NEW.started_at IS NULL)
  EXECUTE FUNCTION waybill_earlier_start();