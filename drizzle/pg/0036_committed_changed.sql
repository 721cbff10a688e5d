-- The three statement-level triggers that keep progress.committed_count (0034) differed only in which transition
-- tables they read and the sign: they now run one function, waybill_committed_changed, which takes each row as +1
-- or -1 by the trigger's operation, and the three older functions go. The triggers keep their names, events and
-- the insert trigger's WHEN (waybill_commit counts its own insert). Dropped and made again in this transaction, so
-- no writer is ever left uncounted. The function's current text lives in
-- lib/store/postgres/functions/committed-count.ts; this is its first.
CREATE OR REPLACE FUNCTION waybill_committed_changed()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('UPDATE %I.progress p SET committed_count = p.committed_count + d.n
    FROM (SELECT run_id, sum(n)::int AS n FROM (%s) x GROUP BY run_id HAVING sum(n) <> 0) d
    WHERE p.run_id = d.run_id', TG_TABLE_SCHEMA, CASE TG_OP
      WHEN 'INSERT' THEN 'SELECT run_id, 1 AS n FROM added'
      WHEN 'DELETE' THEN 'SELECT run_id, -1 AS n FROM removed'
      ELSE 'SELECT run_id, -1 AS n FROM removed UNION ALL SELECT run_id, 1 FROM added' END);
  RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TRIGGER committed_count_insert ON committed;--> statement-breakpoint
DROP TRIGGER committed_count_delete ON committed;--> statement-breakpoint
DROP TRIGGER committed_count_move ON committed;--> statement-breakpoint
CREATE TRIGGER committed_count_insert AFTER INSERT ON committed REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT WHEN (current_setting('waybill.counted', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION waybill_committed_changed();--> statement-breakpoint
CREATE TRIGGER committed_count_delete AFTER DELETE ON committed REFERENCING OLD TABLE AS removed
  FOR EACH STATEMENT EXECUTE FUNCTION waybill_committed_changed();--> statement-breakpoint
CREATE TRIGGER committed_count_move AFTER UPDATE ON committed REFERENCING OLD TABLE AS removed NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION waybill_committed_changed();--> statement-breakpoint
DROP FUNCTION waybill_committed_added();--> statement-breakpoint
DROP FUNCTION waybill_committed_removed();--> statement-breakpoint
DROP FUNCTION waybill_committed_moved();
