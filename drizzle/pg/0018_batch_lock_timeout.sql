-- A batch of commits or claims waits for a row lock at most this long. Then the statement fails with
-- lock_not_available, rolled back whole, and lib/store/postgres/steps-batch.ts sends each request alone: one
-- locked row (an operator's open transaction, another worker's takeover) then holds up only its own request,
-- not every run whose step happened to share its batch. A request sent alone waits as it always did.
ALTER FUNCTION waybill_commit_batch(jsonb, float8) SET lock_timeout = '250ms';--> statement-breakpoint
ALTER FUNCTION waybill_claim_batch(jsonb, float8) SET lock_timeout = '250ms';
