/**
 * The PostgreSQL store's statements. Each store operation is one statement, so a statement is a
 * transaction and a process killed at any instant leaves the tables before or after it. Hot-path
 * statements are named: node-postgres prepares them once per connection.
 *
 * Time is the database's: `now()` plus a skew the caller passes (0 unless a test injected a clock it
 * moves; see postgres.ts). Within one statement now() does not move, so every time a statement writes
 * or compares is the same instant.
 *
 * Isolation is READ COMMITTED. Where a decision reads one row and writes another, the comments say why
 * a concurrent statement cannot slip between them.
 */

/** Epoch seconds by the database clock; $skew is the parameter that holds the skew. */
export const now = (skew: string) => `(extract(epoch from now())::float8 + ${skew}::float8)`;

const COMMITTED = `idem_key AS "idemKey", run_id AS "runId", result_json AS "resultJson",
  committed_at AS "committedAt", step, fingerprint, worker_id AS "workerId", duration_ms AS "durationMs", source`;
const CLAIM = `idem_key AS "idemKey", run_id AS "runId", claimed_at AS "claimedAt", token,
  worker_id AS "workerId", lease_expires_at AS "leaseExpiresAt", heartbeat_at AS "heartbeatAt", step, attempt`;
/** A claim with no lease column was written by an outside client: it lives claim TTL after claimed_at. */
export const expiresAt = (ttl: string, alias = '') => `coalesce(${alias}lease_expires_at, ${alias}claimed_at + ${ttl}::float8)`;

/**
 * Phase 1, one round trip: the waybill_claim function (drizzle/pg/0001_claim_function.sql), which re-reads
 * `committed` with a fresh snapshot after inserting a claim. $1 key, $2 run, $3 token, $4 worker, $5 step,
 * $6 attempt, $7 lease s, $8 claim TTL s, $9 skew.
 */
export const CLAIM_SQL = `SELECT * FROM waybill_claim($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

/** $1 key, $2 token, $3 lease s, $4 skew. */
export const RENEW_SQL = `UPDATE claims SET lease_expires_at = t.now + $3::float8, heartbeat_at = t.now
  FROM (SELECT ${now('$4')} AS now) t WHERE idem_key = $1 AND token = $2`;

/** The progress upsert with counter deltas and the folded skipped/awaited events, gated on a CTE. */
const progressWrite = (p: number, saveMs: number, gate: string) => `prog AS (
  INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
  SELECT $${p}::text, $${p + 1}::int, $${p + 2}::text, t.now, $${p + 3}::int, $${p + 4}::int, $${p + 5}::int, $${saveMs}::float8
  FROM t WHERE $${p}::text IS NOT NULL ${gate}
  ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
    updated_at = excluded.updated_at, executed = progress.executed + excluded.executed,
    skipped = progress.skipped + excluded.skipped, awaited = progress.awaited + excluded.awaited,
    save_ms = coalesce(excluded.save_ms, progress.save_ms)
  RETURNING 1),
folded AS (INSERT INTO step_events (run_id, step, outcome, count, at)
  SELECT $${p}::text, $${p + 1}::int, v.outcome, v.n, t.now
  FROM t, (VALUES ('skipped', $${p + 4}::int), ('awaited', $${p + 5}::int)) AS v (outcome, n)
  WHERE v.n > 0 AND EXISTS (SELECT 1 FROM prog))`;

/** $1 run, $2 step, $3 state, $4 executed, $5 skipped, $6 awaited, $7 skew, $8 save ms. */
export const SAVE_PROGRESS_SQL = `WITH t AS (SELECT ${now('$7')} AS now),
${progressWrite(1, 8, '')}
SELECT 1`;

/**
 * Phase 3. $1 key, $2 token, $3 run, $4 result, $5 step, $6 fingerprint, $7 worker, $8 duration,
 * $9..$14 the progress write (all null when none), $15 skew, $16 the progress write's save ms, $17..$24 the
 * next key's claim as CLAIM_SQL takes it (all null when none).
 *
 * The claim is deleted only where the token is ours; `committed` is inserted only if that delete hit a
 * row, and the progress only if the insert did. A holder fenced off (taken over, expired, resolved)
 * deletes nothing, so writes nothing. The insert does nothing on a conflict, so a result is never written
 * twice and never replaced: a delete that hit with nothing inserted means the key was committed by someone
 * else while we held the claim (an outside client), and our claim is simply gone with it: LeaseLost.
 * heldByUs is only looked up when the delete missed, for the lost-reply check in postgres.ts.
 *
 * The next key's claim runs only once the insert has happened (the constant gate keeps the function from
 * being called otherwise), inside this statement's transaction: one flush to disk covers both. The function
 * reads `committed` for that key with fresh snapshots of its own, as a claim on its own does.
 *
 * The run's status comes back with it (null without a runs row), read from the statement's snapshot: a
 * pause committed before this statement began is seen by this commit, one after it by the next. A paused or
 * cancelled run has no next step claimed: the loop stops after this one.
 */
export const COMMIT_SQL = `WITH t AS (SELECT ${now('$15')} AS now),
del AS (DELETE FROM claims WHERE idem_key = $1 AND token = $2 RETURNING 1),
ins AS (INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id, duration_ms, source)
  SELECT $1::text, $3::text, $4::text, t.now, $5::int, $6::text, $7::text, $8::float8, 'executed' FROM t
  WHERE EXISTS (SELECT 1 FROM del)
  ON CONFLICT (idem_key) DO NOTHING RETURNING 1),
${progressWrite(9, 16, 'AND EXISTS (SELECT 1 FROM ins)')}
SELECT d.n AS deleted, (SELECT count(*) FROM ins)::int AS inserted,
  d.n = 0 AND EXISTS (SELECT 1 FROM claims WHERE idem_key = $1 AND token = $2) AS "heldByUs",
  (SELECT row_to_json(c) FROM waybill_claim($17::text, $18::text, $19::text, $20::text, $21::int, $22::int,
      $23::float8, $24::float8, $15::float8) c
    WHERE $17::text IS NOT NULL AND EXISTS (SELECT 1 FROM ins) AND r.status IS DISTINCT FROM 'paused'
      AND r.status IS DISTINCT FROM 'cancelled') AS next,
  r.status AS "runStatus"
FROM (SELECT count(*)::int AS n FROM del) d LEFT JOIN runs r ON r.id = $3::text`;

/**
 * After a commit whose first attempt died with its connection: did that attempt land? The claim is gone
 * either way, so the committed row must be recognised as ours. duration_ms is measured in fractions of
 * a microsecond; together with the worker, run, step, fingerprint and result it is that one call's mark.
 * $1 key, $2 run, $3 result, $4 step, $5 fingerprint, $6 worker, $7 duration.
 */
export const LANDED_SQL = `SELECT 1 FROM committed WHERE idem_key = $1 AND source = 'executed' AND run_id = $2
  AND result_json = $3 AND step IS NOT DISTINCT FROM $4::int AND fingerprint IS NOT DISTINCT FROM $5::text
  AND worker_id IS NOT DISTINCT FROM $6::text AND duration_ms = $7::float8`;

/** $1 run, $2 key, $3 step, $4 outcome, $5 count, $6 duration, $7 worker, $8 detail, $9 skew. */
export const EVENT_SQL = `INSERT INTO step_events (run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ${now('$9')})`;

/**
 * The failed side effect: delete our claim (token-checked) and record the failure, whether or not the
 * claim was still ours; no event for a claim taken ahead and never used (error null). A retry after a lost
 * connection ($9) records it only if it deleted the claim itself: a first attempt that landed deleted it and
 * recorded the failure already.
 * $1 key, $2 token, $3 run, $4 step, $5 duration, $6 worker, $7 skew, $8 error, $9 retry after a lost reply.
 */
export const RELEASE_SQL = `WITH del AS (DELETE FROM claims WHERE idem_key = $1 AND token = $2 RETURNING 1)
INSERT INTO step_events (run_id, idem_key, step, outcome, count, duration_ms, worker_id, detail, at)
  SELECT $3, $1, $4, 'failed', 1, $5, $6, $8, ${now('$7')}
  WHERE $8::text IS NOT NULL AND (NOT $9::boolean OR EXISTS (SELECT 1 FROM del))`;

export const PROGRESS_SQL = `SELECT run_id AS "runId", step, state_json AS "stateJson", updated_at AS "updatedAt",
  executed, skipped, awaited, save_ms AS "saveMs" FROM progress WHERE run_id = $1`;

export const COMMITTED_SQL = `SELECT ${COMMITTED} FROM committed WHERE idem_key = $1`;

/**
 * Keyset on (step, key), the cursor being the last key seen (its step looked up by primary key), as in
 * sqlite.ts. Keys compare in byte order (COLLATE "C"), as SQLite compares them, so both backends page alike.
 */
export const COUNT_COMMITTED_SQL = `SELECT count(*)::int AS n FROM committed WHERE run_id = $1`;

export const LIST_COMMITTED_SQL = `SELECT ${COMMITTED} FROM committed
  WHERE run_id = $1 AND ($2::text IS NULL OR (coalesce(step, -1), idem_key COLLATE "C") >
    (SELECT coalesce(step, -1), idem_key COLLATE "C" FROM committed WHERE idem_key = $2))
  ORDER BY coalesce(step, -1), idem_key COLLATE "C" LIMIT $3`;

/** $1 run or null, $2 orphaned only, $3 claim TTL s, $4 skew, $5 limit or null, $6/$7 keyset cursor (claimed_at, key). */
export const LIST_CLAIMS_SQL = `SELECT ${CLAIM}, ${expiresAt('$3')} <= t.now AS orphaned
  FROM claims, (SELECT ${now('$4')} AS now) t
  WHERE ($1::text IS NULL OR run_id = $1) AND (NOT $2::boolean OR ${expiresAt('$3')} <= t.now)
    AND ($6::float8 IS NULL OR claimed_at > $6 OR (claimed_at = $6 AND idem_key COLLATE "C" > $7::text COLLATE "C"))
  ORDER BY claimed_at, idem_key COLLATE "C" LIMIT $5`;

/** $1 key, $2 claim TTL s, $3 skew. */
export const GET_CLAIM_SQL = `SELECT ${CLAIM}, ${expiresAt('$2')} <= t.now AS orphaned
  FROM claims, (SELECT ${now('$3')} AS now) t WHERE idem_key = $1`;

/**
 * An operator expires a claim: deleted only if orphaned (or forced), judged on the newest row version.
 * $1 key, $2 force, $3 claim TTL s, $4 actor, $5 skew.
 */
export const EXPIRE_SQL = `WITH t AS (SELECT ${now('$5')} AS now),
del AS (DELETE FROM claims c USING t WHERE c.idem_key = $1 AND ($2::boolean OR ${expiresAt('$3', 'c.')} <= t.now)
  RETURNING c.run_id, c.step, c.worker_id),
ev AS (INSERT INTO step_events (run_id, idem_key, step, outcome, count, worker_id, detail, at)
  SELECT del.run_id, $1::text, del.step, 'expired', 1, del.worker_id,
    'expired by ' || $4::text || ': the step will run again', t.now FROM del, t)
SELECT (SELECT count(*) FROM del)::int AS n, EXISTS (SELECT 1 FROM claims WHERE idem_key = $1) AS "claimSeen"`;

/**
 * An operator commits a result by hand. The claim is deleted only if it is orphaned by the database's clock
 * (or forced), is the attempt the operator saw (when given), and the key is uncommitted; the manual result is
 * inserted only if the delete hit, so the holder (whose token is gone) cannot commit after. As in EXPIRE_SQL,
 * a takeover committed meanwhile makes the delete re-check the newest row version, whose lease is live and
 * attempt higher: it deletes nothing. `seen` is the claim in the statement's snapshot, for saying why not.
 * $1 key, $2 result, $3 detail, $4 skew, $5 force, $6 claim TTL s, $7 attempt or null.
 */
export const RESOLVE_SQL = `WITH t AS (SELECT ${now('$4')} AS now),
del AS (DELETE FROM claims c USING t WHERE c.idem_key = $1
    AND ($5::boolean OR ${expiresAt('$6', 'c.')} <= t.now) AND ($7::int IS NULL OR c.attempt = $7::int)
    AND NOT EXISTS (SELECT 1 FROM committed WHERE idem_key = $1)
  RETURNING c.run_id, c.step, c.worker_id),
ins AS (INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, fingerprint, worker_id, duration_ms, source)
  SELECT $1::text, del.run_id, $2::text, t.now, del.step, NULL, NULL, NULL, 'manual' FROM del, t
  ON CONFLICT (idem_key) DO NOTHING RETURNING 1),
ev AS (INSERT INTO step_events (run_id, idem_key, step, outcome, count, worker_id, detail, at)
  SELECT del.run_id, $1::text, del.step, 'resolved', 1, del.worker_id, $3::text, t.now FROM del, t WHERE EXISTS (SELECT 1 FROM ins))
SELECT (SELECT count(*) FROM ins)::int AS inserted, (SELECT run_id FROM del) AS "runId",
  (SELECT json_build_object('attempt', c.attempt, 'orphaned', ${expiresAt('$6', 'c.')} <= t.now)
    FROM claims c, t WHERE c.idem_key = $1) AS seen,
  EXISTS (SELECT 1 FROM committed WHERE idem_key = $1) AS "committedSeen"`;

/** Ordered by the column, not the float8 alias `id` (no index serves the alias): (run_id, id) reads it in order. */
export const LIST_EVENTS_SQL = `SELECT id::float8 AS id, run_id AS "runId", idem_key AS "idemKey", step, outcome, count,
  duration_ms AS "durationMs", worker_id AS "workerId", detail, at
  FROM step_events WHERE run_id = $1 AND id > $2 ORDER BY step_events.id LIMIT $3`;
