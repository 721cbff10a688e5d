/**
 * waybill_save_progress: the run's position and its counters, as saveProgress writes them and as a commit does
 * once it has inserted its result, so an executed step costs one transaction, not two. Skips and awaits ride
 * with it as one event each, so they never cost a transaction of their own.
 *
 * Its request is the `progress` object of a commit's request (steps-batch.ts, progressFields), and its time the
 * clock when the call begins (clock_timestamp()): in a batch, a request that waited behind a neighbour's row lock
 * is dated after the wait.
 */
export const SAVE_PROGRESS_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_save_progress(p_request jsonb, p_skew float8)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_now float8 := extract(epoch from clock_timestamp())::float8 + p_skew;
  q record;
BEGIN
  SELECT * INTO q FROM jsonb_to_record(p_request) AS x (run text, step int, state text, executed int,
    skipped int, awaited int, "saveMs" float8);
  INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
    VALUES (q.run, q.step, q.state, v_now, q.executed, q.skipped, q.awaited, q."saveMs")
    ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
      updated_at = excluded.updated_at, executed = progress.executed + excluded.executed,
      skipped = progress.skipped + excluded.skipped, awaited = progress.awaited + excluded.awaited,
      save_ms = coalesce(excluded.save_ms, progress.save_ms);
  -- A statement of its own, only when there is something to fold: an INSERT that writes nothing still opens
  -- every index of step_events, a cost each commit would pay.
  IF q.skipped > 0 OR q.awaited > 0 THEN
    INSERT INTO step_events (run_id, step, outcome, count, at)
      SELECT q.run, q.step, v.outcome, v.n, v_now
      FROM (VALUES ('skipped', q.skipped), ('awaited', q.awaited)) AS v (outcome, n) WHERE v.n > 0;
  END IF;
END
$$`;
