-- A run's committed rows, kept on its progress row (committed_count): the runs list reads it instead of counting
-- a 100,000-step run's range of committed_run_step on every request. Counted once here. From here on
-- waybill_commit keeps it in its own progress write (its insert marked by the transaction's waybill.counted
-- setting), and these triggers keep it for every other writer: a rerun's or a fork's rows, retention, an
-- operator's or an outside client's statements. Statement-level over the transition tables, so a bulk insert or
-- delete updates each run's progress row once; a progress row made after its run's rows counts them. The
-- functions' current text lives in lib/store/postgres/functions/committed-count.ts; this is their first.
ALTER TABLE "progress" ADD COLUMN "committed_count" integer;--> statement-breakpoint
UPDATE "progress" p SET "committed_count" = (SELECT count(*) FROM "committed" c WHERE c."run_id" = p."run_id");--> statement-breakpoint
CREATE OR REPLACE FUNCTION waybill_committed_added()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I.progress p SET committed_count = p.committed_count + a.n
    FROM (SELECT run_id, count(*)::int AS n FROM added GROUP BY run_id) a WHERE p.run_id = a.run_id', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waybill_committed_removed()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I.progress p SET committed_count = p.committed_count - r.n
    FROM (SELECT run_id, count(*)::int AS n FROM removed GROUP BY run_id) r WHERE p.run_id = r.run_id', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waybill_committed_moved()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I.progress p SET committed_count = p.committed_count + d.n
    FROM (SELECT run_id, sum(n)::int AS n FROM (
        SELECT run_id, -1 AS n FROM removed UNION ALL SELECT run_id, 1 FROM added) x
      GROUP BY run_id HAVING sum(n) <> 0) d
    WHERE p.run_id = d.run_id', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waybill_progress_counted()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %1$I.progress p SET committed_count = (SELECT count(*) FROM %1$I.committed c WHERE c.run_id = $1)
    WHERE p.run_id = $1', TG_TABLE_SCHEMA) USING NEW.run_id;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER committed_count_insert AFTER INSERT ON committed REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT WHEN (current_setting('waybill.counted', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION waybill_committed_added();--> statement-breakpoint
CREATE TRIGGER committed_count_delete AFTER DELETE ON committed REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION waybill_committed_removed();--> statement-breakpoint
CREATE TRIGGER committed_count_move AFTER UPDATE ON committed REFERENCING OLD TABLE AS removed NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION waybill_committed_moved();--> statement-breakpoint
-- Row-level: an upsert that updates its row fires no AFTER INSERT row trigger, so a progress write costs nothing
-- here unless it makes the row.
CREATE TRIGGER progress_committed_count AFTER INSERT ON progress
  FOR EACH ROW EXECUTE FUNCTION waybill_progress_counted();
