-- Group commit (lib/store/postgres/steps-batch.ts): the commits, or the claims, that many runs of one process
-- have ready at the same moment go to the server as one statement, one transaction, one WAL flush. Each
-- function takes its requests as a jsonb array and answers one row per request, in order. A lone request is
-- an array of one: these are the only commit and claim there are.
--
-- Each request is its own statement inside the loop, exactly the statement a commit was on its own before:
-- in READ COMMITTED every statement of a volatile function takes a fresh snapshot, so a request sees what
-- committed before it began, and the requests before it in the batch, as if they had been sent one after the
-- other. now() is the batch's: its transaction began when it was sent.
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
  v_now float8 := extract(epoch from now())::float8 + p_skew;
BEGIN
  WITH prog AS (INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
    VALUES (p_run, p_step, p_state, v_now, p_executed, p_skipped, p_awaited, p_save_ms)
    ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
      updated_at = excluded.updated_at, executed = progress.executed + excluded.executed,
      skipped = progress.skipped + excluded.skipped, awaited = progress.awaited + excluded.awaited,
      save_ms = coalesce(excluded.save_ms, progress.save_ms))
  INSERT INTO step_events (run_id, step, outcome, count, at)
    SELECT p_run, p_step, v.outcome, v.n, v_now
    FROM (VALUES ('skipped', p_skipped), ('awaited', p_awaited)) AS v (outcome, n) WHERE v.n > 0;
END
$$;
--> statement-breakpoint
-- Per commit, phase 3 of the step protocol as one statement. The claim is deleted only where the token is
-- ours; `committed` is inserted only if that delete hit a row, and the progress only if the insert did. A
-- holder fenced off (taken over, expired, resolved) deletes nothing, so writes nothing. The insert does
-- nothing on a conflict, so a result is never written twice and never replaced: a delete that hit with
-- nothing inserted means the key was committed by someone else while we held the claim. The next key's claim
-- (waybill_claim) is made only once the insert has happened, and not for a run paused or cancelled as this
-- statement's snapshot sees it: the loop stops after this step.
--
-- "mayHaveLanded": an earlier attempt of this commit died with its connection and may have committed. If this
-- one inserted nothing, a committed row that is that attempt's (same worker, run, step, fingerprint, result
-- and duration, measured to a fraction of a microsecond) means the commit succeeded. It is looked up by a
-- statement of its own, after the commit's: that attempt may have held the claim's row lock until just now,
-- and only a fresh snapshot sees its row.
CREATE OR REPLACE FUNCTION waybill_commit_batch(p_requests jsonb, p_skew float8)
RETURNS TABLE (deleted int, inserted int, "heldByUs" boolean, landed boolean, next jsonb, "runStatus" text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  q record;
  o record;
BEGIN
  FOR q IN SELECT * FROM jsonb_to_recordset(p_requests) AS x (key text, token text, run text, result text,
      step int, fingerprint text, worker text, duration float8, input text, "mayHaveLanded" boolean,
      "pRun" text, "pStep" int, "pState" text, "pExecuted" int, "pSkipped" int, "pAwaited" int, "pSaveMs" float8,
      "nKey" text, "nRun" text, "nToken" text, "nWorker" text, "nStep" int, "nAttempt" int, "nLease" float8,
      "nTtl" float8)
  LOOP
    WITH t AS (SELECT extract(epoch from now())::float8 + p_skew AS now),
    del AS (DELETE FROM claims c WHERE c.idem_key = q.key AND c.token = q.token RETURNING 1),
    ins AS (INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id,
        duration_ms, source, input_json)
      SELECT q.key, q.run, q.result, t.now, q.step, q.fingerprint, q.worker, q.duration, 'executed', q.input
      FROM t WHERE EXISTS (SELECT 1 FROM del)
      ON CONFLICT (idem_key) DO NOTHING RETURNING 1)
    SELECT d.n AS deleted, (SELECT count(*) FROM ins)::int AS inserted,
      -- Only looked up when the delete missed, to tell a lost lease from a key committed meanwhile.
      d.n = 0 AND EXISTS (SELECT 1 FROM claims c WHERE c.idem_key = q.key AND c.token = q.token) AS held,
      (SELECT to_jsonb(c) FROM waybill_claim(q."nKey", q."nRun", q."nToken", q."nWorker", q."nStep",
          q."nAttempt", q."nLease", q."nTtl", p_skew) c
        WHERE q."nKey" IS NOT NULL AND EXISTS (SELECT 1 FROM ins) AND r.status IS DISTINCT FROM 'paused'
          AND r.status IS DISTINCT FROM 'cancelled') AS next,
      r.status AS status
    INTO o
    FROM (SELECT count(*)::int AS n FROM del) d LEFT JOIN runs r ON r.id = q.run;

    deleted := o.deleted;
    inserted := o.inserted;
    "heldByUs" := o.held;
    next := o.next;
    "runStatus" := o.status;
    landed := false;
    IF o.inserted = 1 AND q."pRun" IS NOT NULL THEN
      PERFORM waybill_save_progress(q."pRun", q."pStep", q."pState", q."pExecuted", q."pSkipped", q."pAwaited",
        q."pSaveMs", p_skew);
    ELSIF o.inserted = 0 AND q."mayHaveLanded" THEN
      landed := EXISTS (SELECT 1 FROM committed c
        WHERE c.idem_key = q.key AND c.source = 'executed' AND c.run_id = q.run AND c.result_json = q.result
          AND c.step IS NOT DISTINCT FROM q.step AND c.fingerprint IS NOT DISTINCT FROM q.fingerprint
          AND c.worker_id IS NOT DISTINCT FROM q.worker AND c.duration_ms = q.duration);
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$;
--> statement-breakpoint
-- Per claim, waybill_claim (0001_claim_function.sql) as it is: the batch only saves the round trips and the
-- flushes between them.
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
