/**
 * waybill_notify_runnable: idle workers wait on LISTEN (lib/store/postgres/notify.ts) instead of polling. A run
 * that becomes queued (created, released, resumed, retried, rerun, a wait decided — by this code, another version
 * of it, or an operator's UPDATE) sends a notification in the transaction that queues it, delivered when it
 * commits and never if it rolls back. A trigger rather than a call at each site, so that no path that queues a run
 * can forget to; the triggers themselves are schema (drizzle/pg/0013_runnable_notify.sql), and fire only on status
 * changes: lease renewals, progress and step commits never reach their WHEN clause. One channel per schema, named
 * from the table's own schema (notify.ts, wakeChannel), so stores that share a database never wake each other; the
 * payload is the run's workflow, and PostgreSQL folds identical notifications of one transaction into one (a bulk
 * retry sends one per workflow).
 */
export const NOTIFY_RUNNABLE_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_notify_runnable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('waybill_wake_' || left(md5(TG_TABLE_SCHEMA), 16), NEW.workflow);
  RETURN NULL;
END $$`;
