-- Idle workers wait on LISTEN (lib/store/postgres/notify.ts) instead of polling: a run that becomes queued
-- (created, released, resumed, retried, rerun, a wait decided — by this code, another version of it, or an
-- operator's UPDATE) sends a notification in the transaction that queues it, delivered when it commits and
-- never if it rolls back. A trigger rather than a call at each site, so that no path that queues a run can
-- forget to (DBOS notifies its listeners the same way). One channel per schema, named from the table's own
-- schema, so stores that share a database never wake each other; the payload is the run's workflow, and
-- PostgreSQL folds identical notifications of one transaction into one (a bulk retry sends one per workflow).
-- Only status changes fire it: lease renewals, progress and step commits never reach the WHEN clause.
CREATE OR REPLACE FUNCTION waybill_notify_runnable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('waybill_wake_' || left(md5(TG_TABLE_SCHEMA), 16), NEW.workflow);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER runs_notify_queued_insert AFTER INSERT ON runs
  FOR EACH ROW WHEN (NEW.status = 'queued') EXECUTE FUNCTION waybill_notify_runnable();
--> statement-breakpoint
CREATE TRIGGER runs_notify_queued_update AFTER UPDATE OF status ON runs
  FOR EACH ROW WHEN (NEW.status = 'queued' AND OLD.status IS DISTINCT FROM 'queued') EXECUTE FUNCTION waybill_notify_runnable();
