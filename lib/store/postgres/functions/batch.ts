/**
 * waybill_claim_batch: group commit of claims (lib/store/postgres/steps-batch.ts). The claims that many runs of one
 * process have ready at the same moment go to the server as one statement, one transaction: a jsonb array of
 * requests, each handed as it is to waybill_claim in order, one answer row each. In READ COMMITTED every statement
 * of a volatile function takes a fresh snapshot, so each request of a batch sees what committed before it began,
 * and the requests before it in the batch, exactly as if they had been sent one after the other. (Commits, the
 * hot path, are batched set-wise: functions/commit-batch.ts.)
 *
 * No per-request EXCEPTION block: each would be a subtransaction, and a batch of more than 64 writing ones
 * overflows the backend's subtransaction cache, which slows every snapshot in the database. A request the server
 * refuses fails the batch, which is rolled back whole; the caller then sends each request alone, so the refusal
 * reaches its own caller only.
 *
 * Both batch functions wait for a row lock at most lock_timeout. Then the statement fails with lock_not_available,
 * rolled back whole, and steps-batch.ts sends each request alone: one locked row (an operator's open transaction,
 * another worker's takeover) then holds up only its own request, not every run whose step happened to share its
 * batch. A request sent alone waits as it always did. The setting is part of the text: CREATE OR REPLACE resets
 * whatever an ALTER FUNCTION had set.
 */
export const LOCK_TIMEOUT = `SET lock_timeout = '250ms'`;

export const CLAIM_BATCH_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_claim_batch(p_requests jsonb, p_skew float8)
RETURNS TABLE (kind text, done jsonb, holder jsonb, old jsonb, attempt int, "leaseExpiresAt" float8,
  "msUntilExpiry" float8)
LANGUAGE plpgsql VOLATILE ${LOCK_TIMEOUT} AS $$
DECLARE
  q jsonb;
BEGIN
  FOR q IN SELECT value FROM jsonb_array_elements(p_requests) LOOP
    RETURN QUERY SELECT * FROM waybill_claim(q, p_skew);
  END LOOP;
END
$$`;
