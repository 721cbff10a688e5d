/**
 * waybill_earlier_start: the trigger that keeps a run's start in earlier_starts when a retry or a rerun clears
 * runs.started_at, for every writer, so the rate limit's window counts both the cleared start and the next one
 * (drizzle/pg/0039_earlier_starts.sql says what counting one of them let through). Kept while a window may still
 * hold it, the longest period, judged by the clearing row's updated_at; the workflow's older rows go as a newer one
 * comes. Named by TG_TABLE_SCHEMA, as waybill_lone_runs_row: a writer's search_path need not be the store's.
 */
import { PERIOD_MAX_MS } from '../../../domain/run-limits';

const KEPT_S = PERIOD_MAX_MS / 1000;

export const EARLIER_START_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_earlier_start()
RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('DELETE FROM %I.earlier_starts WHERE workflow = $1 AND started_at <= $2 - ${KEPT_S}', TG_TABLE_SCHEMA)
    USING OLD.workflow, NEW.updated_at;
  IF OLD.started_at > NEW.updated_at - ${KEPT_S} THEN
    EXECUTE format('INSERT INTO %I.earlier_starts (run_id, workflow, started_at) VALUES ($1, $2, $3)', TG_TABLE_SCHEMA)
      USING OLD.id, OLD.workflow, OLD.started_at;
  END IF;
  RETURN NULL;
END
$$`;
