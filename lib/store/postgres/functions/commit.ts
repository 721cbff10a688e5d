/**
 * waybill_commit: phase 3 of the step protocol. The claim is deleted only where the token is ours; `committed` is
 * inserted only if that delete hit a row, and the progress (as waybill_save_progress writes it) only if the insert
 * did. A holder fenced off (taken over, expired, resolved) deletes nothing, so writes nothing. The insert does
 * nothing on a conflict, so a result is never written twice and never replaced: a delete that hit with nothing
 * inserted means the key was committed by someone else while we held the claim (heldByUs tells the same when the
 * delete missed). The next key's claim (`next`, a claim request as waybill_claim takes it) is made only once the
 * insert has happened, in this transaction, so one flush to disk covers both; and not for a run paused or cancelled
 * as the commit's snapshot sees it: a pause committed before it is seen by this commit, one after it by the next,
 * and the loop stops after this step. The run's status is answered (null without a runs row).
 *
 * The progress is written here, as waybill_save_progress writes it (functions/progress.ts, writeProgress). The next
 * key is nearly always free, and a lone run's step is little more than this function: so a claim with no run fence
 * is tried here first as waybill_claim's common case (insert, then look again), and only a key held, committed
 * before, or fenced goes to waybill_claim itself. Each statement a PL/pgSQL function runs, and each function it
 * calls, costs its executor's start and end; waybill_claim called from the commit's statement was two levels of
 * them (bench/RESULTS.md, #29 item 4).
 *
 * `mayHaveLanded`: an earlier attempt of this commit died with its connection and may have committed. If this one
 * inserted nothing, a committed row that is that attempt's (same worker, run, step, fingerprint, result and
 * duration, measured to a fraction of a microsecond) means the commit succeeded: `landed`. It is looked up by a
 * statement of its own, after the commit's: that attempt may have held the claim's row lock until just now, and
 * only a fresh snapshot sees its row.
 *
 * Its request (steps-batch.ts, commitFields) is one object, the shape of an element of waybill_commit_batch's
 * array. The return type is fixed: CREATE OR REPLACE cannot change it, so a new one takes a migration that drops
 * this signature first.
 */
import { PRIOR_STATE_MAX_CHARS } from '../../shared/columns';
import { CLAIM_FIELDS, insertClaim } from './claim';
import { COUNTED_SETTING } from './committed-count';
import { recordLoneOurs } from './lone-runs';
import { PROGRESS_FIELDS, writeProgress } from './progress';

/** Our committed row counted on its run's progress row, when the commit's progress write did not count it. */
const countOurs = 'UPDATE progress pr SET committed_count = pr.committed_count + 1 WHERE pr.run_id = q.run';

/** The fields of a commit request, as a record of them is read (jsonb_to_record's column list). */
export const COMMIT_FIELDS = `key text, token text, run text, result text, step int, fingerprint text, worker text,
    duration float8, input text, "mayHaveLanded" boolean, progress jsonb, next jsonb`;

export const COMMITTED_COLUMNS = `idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id,
      duration_ms, source, input_json, prior_step, prior_state_json`;

/**
 * The committed row of the commit request `q` at `now`, in COMMITTED_COLUMNS' order, beside `pr`, its run's
 * progress row as the step found it (null without one): the map as it stood when this step was reached, kept
 * for a rerun from here. A state longer than PRIOR_STATE_MAX_CHARS (lib/store/shared/columns.ts) is not copied.
 */
export const ourCommittedRow = (q: string, now: string) =>
  `${q}.key, ${q}.run, ${q}.result, ${now}, ${q}.step, ${q}.fingerprint, ${q}.worker, ${q}.duration, 'executed', ${q}.input,
      CASE WHEN pr.run_id IS NULL THEN 0 WHEN length(pr.state_json) <= ${PRIOR_STATE_MAX_CHARS} THEN pr.step END,
      CASE WHEN pr.run_id IS NULL THEN '{}' WHEN length(pr.state_json) <= ${PRIOR_STATE_MAX_CHARS} THEN pr.state_json END`;

export const COMMIT_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_commit(p_request jsonb, p_skew float8,
  OUT deleted int, OUT inserted int, OUT "heldByUs" boolean, OUT landed boolean, OUT next jsonb,
  OUT "runStatus" text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  q record;
  p record;
  n record;
  v_now float8;
  v_set text;
BEGIN
  SELECT * INTO q FROM jsonb_to_record(p_request) AS x (${COMMIT_FIELDS});
  -- The fence's lock on the run row first, before the claim's: a rerun locks the run, then deletes its claims,
  -- and taking the two in the other order here would deadlock with it.
  IF q.next->>'fence' IS NOT NULL THEN
    PERFORM 1 FROM runs r WHERE r.id = q.next->>'run' FOR KEY SHARE;
  END IF;
  -- Our insert is counted by us, below: the committed insert trigger passes it by (functions/committed-count.ts).
  -- An assignment, not PERFORM: a simple expression costs no executor start.
  v_set := set_config('${COUNTED_SETTING}', 'on', true);
  WITH t AS (SELECT extract(epoch from clock_timestamp())::float8 + p_skew AS now),
  del AS (DELETE FROM claims c WHERE c.idem_key = q.key AND c.token = q.token RETURNING 1),
  ins AS (INSERT INTO committed (${COMMITTED_COLUMNS})
    SELECT ${ourCommittedRow('q', 't.now')}
    FROM t LEFT JOIN progress pr ON pr.run_id = q.run WHERE EXISTS (SELECT 1 FROM del)
    ON CONFLICT (idem_key) DO NOTHING RETURNING 1)
  SELECT d.n, (SELECT count(*) FROM ins)::int,
    d.n = 0 AND EXISTS (SELECT 1 FROM claims c WHERE c.idem_key = q.key AND c.token = q.token),
    r.status
  INTO deleted, inserted, "heldByUs", "runStatus"
  FROM (SELECT count(*)::int AS n FROM del) d LEFT JOIN runs r ON r.id = q.run;
  v_set := set_config('${COUNTED_SETTING}', 'off', true);

  landed := false;
  IF inserted = 1 THEN
    IF q.progress IS NOT NULL THEN
      v_now := extract(epoch from clock_timestamp())::float8 + p_skew;
      SELECT * INTO p FROM jsonb_to_record(q.progress) AS x (${PROGRESS_FIELDS});
      ${writeProgress('p', 'v_now', '(p.run = q.run)::int')};
      IF p.run IS DISTINCT FROM q.run THEN
        ${countOurs};
        ${recordLoneOurs('q', '"runStatus"')};
      END IF;
    ELSE
      ${countOurs};
      ${recordLoneOurs('q', '"runStatus"')};
    END IF;
    IF q.next IS NULL OR "runStatus" IS NOT DISTINCT FROM 'paused' OR "runStatus" IS NOT DISTINCT FROM 'cancelled' THEN
      RETURN;
    END IF;
    SELECT * INTO n FROM jsonb_to_record(q.next) AS x (${CLAIM_FIELDS});
    IF n.fence IS NULL THEN
      v_now := extract(epoch from clock_timestamp())::float8 + p_skew;
      ${insertClaim('n', 'v_now')};
      IF FOUND THEN
        PERFORM 1 FROM committed c WHERE c.idem_key = n.key;
        IF NOT FOUND THEN
          next := jsonb_build_object('kind', 'fresh', 'done', NULL, 'holder', NULL, 'old', NULL,
            'attempt', n.attempt, 'leaseExpiresAt', v_now + n.lease, 'msUntilExpiry', NULL);
          RETURN;
        END IF;
        DELETE FROM claims c WHERE c.idem_key = n.key AND c.token = n.token;
      END IF;
    END IF;
    SELECT to_jsonb(c) INTO next FROM waybill_claim(q.next, p_skew) c;
  ELSIF inserted = 0 AND q."mayHaveLanded" THEN
    landed := EXISTS (SELECT 1 FROM committed c
      WHERE c.idem_key = q.key AND c.source = 'executed' AND c.run_id = q.run AND c.result_json = q.result
        AND c.step IS NOT DISTINCT FROM q.step AND c.fingerprint IS NOT DISTINCT FROM q.fingerprint
        AND c.worker_id IS NOT DISTINCT FROM q.worker AND c.duration_ms = q.duration);
  END IF;
END
$$`;
