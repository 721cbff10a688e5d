-- waybill_claim as in 0001_claim_function.sql, two changes. A takeover's `expired` event names both sides as
-- data (step_events.attempt is the taker's attempt; previous_worker_id and previous_attempt are the holder whose
-- lease passed, columns added by 0014). And its now is the clock when the call begins, not its transaction's
-- start: in a group commit's batch (0017) a claim may follow a request that waited on a row lock, and a lease
-- dated from before that wait would be granted nearly spent. Same signature, so CREATE OR REPLACE swaps it in.
CREATE OR REPLACE FUNCTION waybill_claim(
  p_key text, p_run text, p_token text, p_worker text, p_step int, p_attempt int,
  p_lease float8, p_ttl float8, p_skew float8)
RETURNS TABLE (kind text, done jsonb, holder jsonb, old jsonb, attempt int, "leaseExpiresAt" float8, "msUntilExpiry" float8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_now float8 := extract(epoch from clock_timestamp())::float8 + p_skew;
  v_done jsonb;
  v_claim claims%ROWTYPE;
  v_expires float8;
  v_attempt int;
BEGIN
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
