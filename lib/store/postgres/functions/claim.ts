/**
 * waybill_claim: phase 1 of the step protocol in one round trip. A function, not one statement, because a single
 * READ COMMITTED statement reads `committed` from the snapshot it started with while its INSERT checks the claims
 * key against the newest rows: a whole claim -> execute -> commit by another worker can land in between, and the
 * insert then meets no conflict although the key is committed. Each statement of a volatile function takes a
 * fresh snapshot, so the check after a successful insert sees such a commit.
 *
 * Its request (steps-batch.ts, claimFields) is one object, the shape of an element of waybill_claim_batch's array
 * and of a commit's `next`. It answers one row: kind is committed | fresh | mine | taken | held | retry | fenced.
 * Its now is the clock when the call begins, not its transaction's start: in a batch a claim may follow a request
 * that waited on a row lock, and a lease dated from before that wait would be granted nearly spent. A takeover's
 * `expired` event names both sides as data: step_events.attempt is the taker's, previous_worker_id and
 * previous_attempt the holder's whose lease passed or who was declared dead (its detail says which).
 *
 * The run-level fence (`fence`, ClaimRequest.fence: the run's `attempts` when its worker took it): the claim is
 * made only while the run is still that execution's, owner and attempts unchanged. A rerun (owner cleared), a
 * takeover (attempts raised) or a hand-back leaves the old execution's claims refused ('fenced'), so a worker that
 * has not yet heard of a rerun cannot claim, execute and commit a step of it with the old input.
 */
import { claimExpiresAtText, expiredByDeathText, takeoverDetailText } from '../../shared/claim-expiry-sql';

const COMMITTED_JSON = `jsonb_build_object('idemKey', c.idem_key, 'runId', c.run_id, 'resultJson', c.result_json,
      'committedAt', c.committed_at, 'step', c.step, 'fingerprint', c.fingerprint, 'workerId', c.worker_id,
      'durationMs', c.duration_ms, 'source', c.source)`;

const CLAIM_JSON = `jsonb_build_object('idemKey', v_claim.idem_key,
        'runId', v_claim.run_id, 'claimedAt', v_claim.claimed_at, 'token', v_claim.token,
        'workerId', v_claim.worker_id, 'leaseExpiresAt', v_claim.lease_expires_at,
        'heartbeatAt', v_claim.heartbeat_at, 'step', v_claim.step, 'attempt', v_claim.attempt)`;

/**
 * The fields of a claim request, as a record of them is read (jsonb_to_record's column list): here and for a
 * commit's `next` (functions/commit.ts), which is the same request. `ttl` is read only by the takeover check here.
 */
export const CLAIM_FIELDS = `key text, run text, token text, worker text, step int, attempt int, lease float8,
    ttl float8, fence int`;

const CLAIM_COLUMNS = 'idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt';
const claimValues = (q: string, now: string) =>
  `${q}.key, ${q}.run, ${now}, ${q}.token, ${q}.worker, ${now} + ${q}.lease, ${now}, ${q}.step, ${q}.attempt`;

/**
 * A claim's row for a key nobody holds, from the record `q` of a claim request's fields at the time `now`: inserted,
 * or nothing on a conflict (FOUND says which). A row inserted must be looked for in `committed` again by a
 * statement of its own (see above); waybill_commit takes the next key's claim with it too (functions/commit.ts).
 */
export const insertClaim = (q: string, now: string) =>
  `INSERT INTO claims (${CLAIM_COLUMNS})
    VALUES (${claimValues(q, now)})
    ON CONFLICT (idem_key) DO NOTHING`;

/**
 * insertClaim for each row `from` (a FROM clause and its WHERE) gives the record `q`: waybill_commit_batch's next
 * keys (functions/commit-batch.ts). RETURNING the keys inserted.
 */
export const insertClaimsFrom = (q: string, now: string, from: string) =>
  `INSERT INTO claims (${CLAIM_COLUMNS})
    SELECT ${claimValues(q, now)}
    ${from}
    ON CONFLICT (idem_key) DO NOTHING RETURNING idem_key`;

export const CLAIM_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_claim(p_request jsonb, p_skew float8)
RETURNS TABLE (kind text, done jsonb, holder jsonb, old jsonb, attempt int, "leaseExpiresAt" float8, "msUntilExpiry" float8)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_now float8 := extract(epoch from clock_timestamp())::float8 + p_skew;
  q record;
  v_done jsonb;
  v_claim claims%ROWTYPE;
  v_expires float8;
  v_attempt int;
  v_died boolean;
BEGIN
  SELECT * INTO q FROM jsonb_to_record(p_request) AS x (${CLAIM_FIELDS});
  -- The fence: KEY SHARE waits for a rerun or a takeover that holds the run row (FOR UPDATE) and then reads the
  -- row it left, so a claim racing one is judged on its outcome; it does not wait for a heartbeat's UPDATE,
  -- which takes no key lock.
  IF q.fence IS NOT NULL THEN
    PERFORM 1 FROM runs r WHERE r.id = q.run AND r.owner = q.worker AND r.attempts = q.fence FOR KEY SHARE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'fenced'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
      RETURN;
    END IF;
  END IF;

  SELECT ${COMMITTED_JSON}
    INTO v_done FROM committed c WHERE c.idem_key = q.key;
  IF v_done IS NOT NULL THEN
    RETURN QUERY SELECT 'committed'::text, v_done, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
    RETURN;
  END IF;

  -- The common case, a key nobody holds: insert, then look again with a fresh snapshot.
  ${insertClaim('q', 'v_now')};
  IF FOUND THEN
    SELECT ${COMMITTED_JSON}
      INTO v_done FROM committed c WHERE c.idem_key = q.key;
    IF v_done IS NOT NULL THEN
      DELETE FROM claims WHERE idem_key = q.key AND token = q.token;
      RETURN QUERY SELECT 'committed'::text, v_done, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
      RETURN;
    END IF;
    RETURN QUERY SELECT 'fresh'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, q.attempt, v_now + q.lease, NULL::float8;
    RETURN;
  END IF;

  -- Someone holds the key. Lock the row: a holder renewing or committing meanwhile is seen as it is now.
  SELECT * INTO v_claim FROM claims WHERE idem_key = q.key FOR UPDATE;
  IF NOT FOUND THEN
    -- Released or committed between the insert and the lock: the caller simply claims again.
    RETURN QUERY SELECT 'retry'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, NULL::int, NULL::float8, NULL::float8;
    RETURN;
  END IF;
  v_expires := ${claimExpiresAtText('q.ttl', 'v_claim.')};

  IF v_claim.token = q.token THEN
    -- Our own claim, made by an attempt whose reply was lost: renew it and carry on.
    UPDATE claims SET lease_expires_at = v_now + q.lease, heartbeat_at = v_now WHERE idem_key = q.key;
    RETURN QUERY SELECT 'mine'::text, NULL::jsonb, NULL::jsonb, NULL::jsonb, v_claim.attempt, v_now + q.lease, NULL::float8;
    RETURN;
  END IF;

  IF v_expires > v_now THEN
    RETURN QUERY SELECT 'held'::text, NULL::jsonb, ${CLAIM_JSON},
      NULL::jsonb, NULL::int, NULL::float8, (v_expires - v_now) * 1000;
    RETURN;
  END IF;

  -- The lease passed, or the holder was declared dead (its claim expired then): take it over under the row lock,
  -- and say which in the run's timeline.
  v_attempt := greatest(q.attempt, v_claim.attempt + 1);
  v_died := ${expiredByDeathText('q.key', 'v_claim.worker_id', 'v_claim.attempt')};
  UPDATE claims SET run_id = q.run, claimed_at = v_now, token = q.token, worker_id = q.worker,
      lease_expires_at = v_now + q.lease, heartbeat_at = v_now, step = q.step, attempt = v_attempt
    WHERE idem_key = q.key;
  INSERT INTO step_events (run_id, idem_key, step, outcome, count, worker_id, detail, at, attempt,
      previous_worker_id, previous_attempt)
    VALUES (v_claim.run_id, q.key, v_claim.step, 'expired', 1, q.worker,
      ${takeoverDetailText('v_claim.worker_id', 'v_died')}, v_now, v_attempt,
      v_claim.worker_id, v_claim.attempt);
  RETURN QUERY SELECT 'taken'::text, NULL::jsonb, NULL::jsonb, ${CLAIM_JSON},
    v_attempt, v_now + q.lease, NULL::float8;
END
$$`;
