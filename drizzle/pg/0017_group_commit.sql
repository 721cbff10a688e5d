-- Group commit (lib/store/postgres/steps-batch.ts): the commits, or the claims, that many runs of one process
-- have ready at the same moment go to the server as one statement, one transaction, one WAL flush.
--
-- What one commit does is one function, waybill_commit, as what one claim does is waybill_claim
-- (0001_claim_function.sql, as 0015 left it). A request on its own calls it directly; a batch is a jsonb array of requests that
-- waybill_commit_batch (waybill_claim_batch) hands to it one by one, in order, answering one row each. In READ
-- COMMITTED every statement of a volatile function takes a fresh snapshot, so each request of a batch sees
-- what committed before it began, and the requests before it in the batch, exactly as if they had been sent
-- one after the other. Each request's time is the clock when its call begins (clock_timestamp(), not the
-- batch transaction's now()), so one that waited behind a neighbour's row lock is dated after the wait.
--
-- No per-request EXCEPTION block: each would be a subtransaction, and a batch of more than 64 writing ones
-- overflows the backend's subtransaction cache, which slows every snapshot in the database. A request the
-- server refuses fails the batch, which is rolled back whole; the caller then sends each request alone, so
-- the refusal reaches its own caller only (steps-batch.ts).

-- The run's position and its counters, as saveProgress writes them and as a commit does once it has inserted
-- its result: an executed step costs one transaction, not two. Skips and awaits ride with it as one event
-- each, so they never cost a transaction of their own.
CREATE OR REPLACE FUNCTION waybill_save_progress(p_run text, p_step int, p_state text, p_executed int,
  p_skipped int, p_awaited int, p_save_ms float8, p_skew float8)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_now float8 := extract(epoch from clock_timestamp())::float8 + p_skew;
BEGIN
  INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
    VALUES (p_run, p_step, p_state, v_now, p_executed, p_skipped, p_awaited, p_save_ms)
    ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
      updated_at = excluded.updated_at, executed = progress.executed + excluded.executed,
      skipped = progress.skipped + excluded.skipped, awaited = progress.awaited + excluded.awaited,
      save_ms = coalesce(excluded.save_ms, progress.save_ms);
  -- A statement of its own, only when there is something to fold: an INSERT that writes nothing still opens
  -- every index of step_events, a cost each commit would pay.
  IF p_skipped > 0 OR p_awaited > 0 THEN
    INSERT INTO step_events (run_id, step, outcome, count, at)
      SELECT p_run, p_step, v.outcome, v.n, v_now
      FROM (VALUES ('skipped', p_skipped), ('awaited', p_awaited)) AS v (outcome, n) WHERE v.n > 0;
  END IF;
END
$$;
--> statement-breakpoint
-- Phase 3 of the step protocol. The claim is deleted only where the token is ours; `committed` is inserted
-- only if that delete hit a row, and the progress only if the insert did. A holder fenced off (taken over,
-- expired, resolved) deletes nothing, so writes nothing. The insert does nothing on a conflict, so a result is
-- never written twice and never replaced: a delete that hit with nothing inserted means the key was committed
-- by someone else while we held the claim (heldByUs tells the same when the delete missed). The next key's
-- claim (waybill_claim) is made only once the insert has happened, in this transaction, so one flush to disk
-- covers both; and not for a run paused or cancelled as this statement's snapshot sees it: a pause committed
-- before it is seen by this commit, one after it by the next, and the loop stops after this step. The run's
-- status is answered (null without a runs row).
--
-- p_may_have_landed: an earlier attempt of this commit died with its connection and may have committed. If
-- this one inserted nothing, a committed row that is that attempt's (same worker, run, step, fingerprint,
-- result and duration, measured to a fraction of a microsecond) means the commit succeeded: `landed`. It is
-- looked up by a statement of its own, after the commit's: that attempt may have held the claim's row lock
-- until just now, and only a fresh snapshot sees its row.
CREATE OR REPLACE FUNCTION waybill_commit(p_key text, p_token text, p_run text, p_result text, p_step int,
  p_fingerprint text, p_worker text, p_duration float8, p_input text, p_may_have_landed boolean,
  p_progress_run text, p_progress_step int, p_progress_state text, p_executed int, p_skipped int, p_awaited int,
  p_save_ms float8,
  p_next_key text, p_next_run text, p_next_token text, p_next_worker text, p_next_step int, p_next_attempt int,
  p_next_lease float8, p_next_ttl float8,
  p_skew float8,
  OUT deleted int, OUT inserted int, OUT "heldByUs" boolean, OUT landed boolean, OUT next jsonb,
  OUT "runStatus" text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  WITH t AS (SELECT extract(epoch from clock_timestamp())::float8 + p_skew AS now),
  del AS (DELETE FROM claims c WHERE c.idem_key = p_key AND c.token = p_token RETURNING 1),
  -- The map as it stood when this step was reached, kept beside the result for a rerun from here; a state longer
  -- than PRIOR_STATE_MAX_CHARS (lib/store/columns.ts, 16384) is not copied.
  ins AS (INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id,
      duration_ms, source, input_json, prior_step, prior_state_json)
    SELECT p_key, p_run, p_result, t.now, p_step, p_fingerprint, p_worker, p_duration, 'executed', p_input,
      CASE WHEN pr.run_id IS NULL THEN 0 WHEN length(pr.state_json) <= 16384 THEN pr.step END,
      CASE WHEN pr.run_id IS NULL THEN '{}' WHEN length(pr.state_json) <= 16384 THEN pr.state_json END
    FROM t LEFT JOIN progress pr ON pr.run_id = p_run WHERE EXISTS (SELECT 1 FROM del)
    ON CONFLICT (idem_key) DO NOTHING RETURNING 1)
  SELECT d.n, (SELECT count(*) FROM ins)::int,
    d.n = 0 AND EXISTS (SELECT 1 FROM claims c WHERE c.idem_key = p_key AND c.token = p_token),
    (SELECT to_jsonb(c) FROM waybill_claim(p_next_key, p_next_run, p_next_token, p_next_worker, p_next_step,
        p_next_attempt, p_next_lease, p_next_ttl, p_skew) c
      WHERE p_next_key IS NOT NULL AND EXISTS (SELECT 1 FROM ins) AND r.status IS DISTINCT FROM 'paused'
        AND r.status IS DISTINCT FROM 'cancelled'),
    r.status
  INTO deleted, inserted, "heldByUs", next, "runStatus"
  FROM (SELECT count(*)::int AS n FROM del) d LEFT JOIN runs r ON r.id = p_run;

  landed := false;
  IF inserted = 1 AND p_progress_run IS NOT NULL THEN
    PERFORM waybill_save_progress(p_progress_run, p_progress_step, p_progress_state, p_executed, p_skipped,
      p_awaited, p_save_ms, p_skew);
  ELSIF inserted = 0 AND p_may_have_landed THEN
    landed := EXISTS (SELECT 1 FROM committed c
      WHERE c.idem_key = p_key AND c.source = 'executed' AND c.run_id = p_run AND c.result_json = p_result
        AND c.step IS NOT DISTINCT FROM p_step AND c.fingerprint IS NOT DISTINCT FROM p_fingerprint
        AND c.worker_id IS NOT DISTINCT FROM p_worker AND c.duration_ms = p_duration);
  END IF;
END
$$;
--> statement-breakpoint
-- A batch of commits: their fields by the names steps-batch.ts gives them, each request in turn.
CREATE OR REPLACE FUNCTION waybill_commit_batch(p_requests jsonb, p_skew float8)
RETURNS TABLE (deleted int, inserted int, "heldByUs" boolean, landed boolean, next jsonb, "runStatus" text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  q record;
BEGIN
  FOR q IN SELECT * FROM jsonb_to_recordset(p_requests) AS x (key text, token text, run text, result text,
      step int, fingerprint text, worker text, duration float8, input text, "mayHaveLanded" boolean,
      "pRun" text, "pStep" int, "pState" text, "pExecuted" int, "pSkipped" int, "pAwaited" int, "pSaveMs" float8,
      "nKey" text, "nRun" text, "nToken" text, "nWorker" text, "nStep" int, "nAttempt" int, "nLease" float8,
      "nTtl" float8)
  LOOP
    RETURN QUERY SELECT * FROM waybill_commit(q.key, q.token, q.run, q.result, q.step, q.fingerprint, q.worker,
      q.duration, q.input, q."mayHaveLanded", q."pRun", q."pStep", q."pState", q."pExecuted", q."pSkipped",
      q."pAwaited", q."pSaveMs", q."nKey", q."nRun", q."nToken", q."nWorker", q."nStep", q."nAttempt", q."nLease",
      q."nTtl", p_skew);
  END LOOP;
END
$$;
--> statement-breakpoint
-- A batch of claims, each waybill_claim (0001_claim_function.sql, as 0015 left it) as it is, in turn.
CREATE OR REPLACE FUNCTION waybill_claim_batch(p_requests jsonb, p_skew float8)
RETURNS TABLE (kind text, done jsonb, holder jsonb, old jsonb, attempt int, "leaseExpiresAt" float8,
  "msUntilExpiry" float8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  q record;
BEGIN
  FOR q IN SELECT * FROM jsonb_to_recordset(p_requests) AS x (key text, run text, token text, worker text,
      step int, attempt int, lease float8, ttl float8)
  LOOP
    RETURN QUERY SELECT * FROM waybill_claim(q.key, q.run, q.token, q.worker, q.step, q.attempt, q.lease, q.ttl,
      p_skew);
  END LOOP;
END
$$;
