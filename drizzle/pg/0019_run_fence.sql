-- The run-level fence: a claim made for a run's execution (ClaimRequest.fence, the run's `attempts` when its
-- worker took it) is made only while the run is still that execution's: owner and attempts unchanged. A rerun
-- (owner cleared), a takeover (attempts raised) or a hand-back leaves the old execution's claims refused
-- ('fenced'), so a worker that has not yet heard of a rerun cannot claim, execute and commit a step of it with
-- the old input. waybill_claim and waybill_commit (whose claim taken ahead passes the fence on) take it as a
-- last parameter with a default, so a new signature: the old functions go. The batch functions read it from
-- their requests, and keep 0018's lock_timeout, which CREATE OR REPLACE would reset.
DROP FUNCTION waybill_claim(text, text, text, text, int, int, float8, float8, float8);--> statement-breakpoint
DROP FUNCTION waybill_commit(text, text, text, text, int, text, text, float8, text, boolean, text, int, text,
  int, int, int, float8, text, text, text, text, int, int, float8, float8, float8);--> statement-breakpoint
CREATE FUNCTION waybill_claim(
  p_key text, p_run text, p_token text, p_worker text, p_step int, p_attempt int,
  p_lease float8, p_ttl float8, p_skew float8, p_fence int DEFAULT NULL)
RETURNS TABLE (kind text, done jsonb, holder jsonb, old jsonb, attempt int, "leaseExpiresAt" float8, "msUntilExpiry" float8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_now float8 := extract(epoch from clock_timestamp())::float8 + p_skew;
  v_done jsonb;
  v_claim claims%ROWTYPE;
  v_expires float8;
  v_attempt int;
BEGIN
  -- The run-level fence (ClaimRequest.fence): the run must still be this execution's. KEY SHARE waits for a
  -- rerun or a takeover that holds the run row (FOR UPDATE) and then reads the row it left, so a claim racing
  -- one is judged on its outcome; it does not wait for a heartbeat's UPDATE, which takes no key lock.
  IF p_fence IS NOT NULL THEN
    PERFORM 1 FROM runs r WHERE r.id = p_run AND r.owner = p_worker AND r.attempts = p_fence FOR KEY SHARE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'fenced'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
      RETURN;
    END IF;
  END IF;

  SELECT jsonb_build_object('idemKey', c.idem_key, 'runId', c.run_id, 'resultJson', c.result_json,
      'committedAt', c.committed_at, 'step', c.step, 'fingerprint', c.fingerprint, 'workerId', c.worker_id,
      'durationMs', c.duration_ms, 'source', c.source)
    INTO v_done FROM committed c WHERE c.idem_key = p_key;
  IF v_done IS NOT NULL THEN
    RETURN QUERY SELECT 'committed'::text, v_done, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
    RETURN;
  END IF;

  -- The common case, a key nobody holds: insert, then look again with a fresh snapshot.
  INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt)
    VALUES (p_key, p_run, v_now, p_token, p_worker, v_now + p_lease, v_now, p_step, p_attempt)
    ON CONFLICT (idem_key) DO NOTHING;
  IF FOUND THEN
    SELECT jsonb_build_object('idemKey', c.idem_key, 'runId', c.run_id, 'resultJson', c.result_json,
        'committedAt', c.committed_at, 'step', c.step, 'fingerprint', c.fingerprint, 'workerId', c.worker_id,
        'durationMs', c.duration_ms, 'source', c.source)
      INTO v_done FROM committed c WHERE c.idem_key = p_key;
    IF v_done IS NOT NULL THEN
      DELETE FROM claims WHERE idem_key = p_key AND token = p_token;
      RETURN QUERY SELECT 'committed'::text, v_done, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
      RETURN;
    END IF;
    RETURN QUERY SELECT 'fresh'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, p_attempt, v_now + p_lease, NULL::float8;
    RETURN;
  END IF;

  -- Someone holds the key. Lock the row: a holder renewing or committing meanwhile is seen as it is now.
  SELECT * INTO v_claim FROM claims WHERE idem_key = p_key FOR UPDATE;
  IF NOT FOUND THEN
    -- Released or committed between the insert and the lock: the caller simply claims again.
    RETURN QUERY SELECT 'retry'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
    RETURN;
  END IF;
  v_expires := coalesce(v_claim.lease_expires_at, v_claim.claimed_at + p_ttl);

  IF v_claim.token = p_token THEN
    -- Our own claim, made by an attempt whose reply was lost: renew it and carry on.
    UPDATE claims SET lease_expires_at = v_now + p_lease, heartbeat_at = v_now WHERE idem_key = p_key;
    RETURN QUERY SELECT 'mine'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, v_claim.attempt, v_now + p_lease, NULL::float8;
    RETURN;
  END IF;

  IF v_expires > v_now THEN
    RETURN QUERY SELECT 'held'::text, NULL::jsonb, jsonb_build_object('idemKey', v_claim.idem_key,
        'runId', v_claim.run_id, 'claimedAt', v_claim.claimed_at, 'token', v_claim.token,
        'workerId', v_claim.worker_id, 'leaseExpiresAt', v_claim.lease_expires_at,
        'heartbeatAt', v_claim.heartbeat_at, 'step', v_claim.step, 'attempt', v_claim.attempt),
      NULL::jsonb, NULL::int, NULL::float8, (v_expires - v_now) * 1000;
    RETURN;
  END IF;

  -- The lease passed: take it over under the row lock, and say so in the run's timeline.
  v_attempt := greatest(p_attempt, v_claim.attempt + 1);
  UPDATE claims SET run_id = p_run, claimed_at = v_now, token = p_token, worker_id = p_worker,
      lease_expires_at = v_now + p_lease, heartbeat_at = v_now, step = p_step, attempt = v_attempt
    WHERE idem_key = p_key;
  INSERT INTO step_events (run_id, idem_key, step, outcome, count, worker_id, detail, at, attempt,
      previous_worker_id, previous_attempt)
    VALUES (v_claim.run_id, p_key, v_claim.step, 'expired', 1, p_worker,
      'lease of ' || coalesce(v_claim.worker_id, 'an outside client') || ' passed; taken over', v_now, v_attempt,
      v_claim.worker_id, v_claim.attempt);
  RETURN QUERY SELECT 'taken'::text, NULL::jsonb, NULL::jsonb, jsonb_build_object('idemKey', v_claim.idem_key,
      'runId', v_claim.run_id, 'claimedAt', v_claim.claimed_at, 'token', v_claim.token,
      'workerId', v_claim.worker_id, 'leaseExpiresAt', v_claim.lease_expires_at,
      'heartbeatAt', v_claim.heartbeat_at, 'step', v_claim.step, 'attempt', v_claim.attempt),
    v_attempt, v_now + p_lease, NULL::float8;
END
$$;
--> statement-breakpoint
CREATE FUNCTION waybill_commit(p_key text, p_token text, p_run text, p_result text, p_step int,
  p_fingerprint text, p_worker text, p_duration float8, p_input text, p_may_have_landed boolean,
  p_progress_run text, p_progress_step int, p_progress_state text, p_executed int, p_skipped int, p_awaited int,
  p_save_ms float8,
  p_next_key text, p_next_run text, p_next_token text, p_next_worker text, p_next_step int, p_next_attempt int,
  p_next_lease float8, p_next_ttl float8,
  p_skew float8, p_next_fence int DEFAULT NULL,
  OUT deleted int, OUT inserted int, OUT "heldByUs" boolean, OUT landed boolean, OUT next jsonb,
  OUT "runStatus" text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  -- The fence's lock on the run row first, before the claim's: a rerun locks the run, then deletes its claims,
  -- and taking the two in the other order here would deadlock with it.
  IF p_next_fence IS NOT NULL THEN
    PERFORM 1 FROM runs r WHERE r.id = p_next_run FOR KEY SHARE;
  END IF;
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
        p_next_attempt, p_next_lease, p_next_ttl, p_skew, p_next_fence) c
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
      "nTtl" float8, "nFence" int)
  LOOP
    RETURN QUERY SELECT * FROM waybill_commit(q.key, q.token, q.run, q.result, q.step, q.fingerprint, q.worker,
      q.duration, q.input, q."mayHaveLanded", q."pRun", q."pStep", q."pState", q."pExecuted", q."pSkipped",
      q."pAwaited", q."pSaveMs", q."nKey", q."nRun", q."nToken", q."nWorker", q."nStep", q."nAttempt", q."nLease",
      q."nTtl", p_skew, q."nFence");
  END LOOP;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waybill_claim_batch(p_requests jsonb, p_skew float8)
RETURNS TABLE (kind text, done jsonb, holder jsonb, old jsonb, attempt int, "leaseExpiresAt" float8,
  "msUntilExpiry" float8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  q record;
BEGIN
  FOR q IN SELECT * FROM jsonb_to_recordset(p_requests) AS x (key text, run text, token text, worker text,
      step int, attempt int, lease float8, ttl float8, fence int)
  LOOP
    RETURN QUERY SELECT * FROM waybill_claim(q.key, q.run, q.token, q.worker, q.step, q.attempt, q.lease, q.ttl,
      p_skew, q.fence);
  END LOOP;
END
$$;
--> statement-breakpoint
ALTER FUNCTION waybill_commit_batch(jsonb, float8) SET lock_timeout = '250ms';--> statement-breakpoint
ALTER FUNCTION waybill_claim_batch(jsonb, float8) SET lock_timeout = '250ms';
