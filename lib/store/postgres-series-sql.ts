/**
 * The run page's series on PostgreSQL, mirroring sqlite-insights.ts: grouped in the database so a
 * 100,000-step run sends a few hundred rows. Counts and sums are cast to int (pg hands bigint over as text).
 */

/** $1 run, $2 buckets. The width comes from the run's last step, so the GROUP BY yields at most $2 rows. */
export const STEP_BUCKETS_SQL = `WITH w AS (
    SELECT greatest(1, (coalesce(max(step), 0) + $2::int) / $2::int) AS w FROM committed WHERE run_id = $1)
  SELECT min(step) AS "fromStep", max(step) AS "toStep", count(*)::int AS count,
    avg(duration_ms)::float8 AS "avgMs", max(duration_ms) AS "maxMs"
  FROM committed, w WHERE run_id = $1 AND step IS NOT NULL GROUP BY step / w.w ORDER BY "fromStep"`;

/** $1 run, $2 buckets: executed commits and folded skip/await events in equal slices of the run's time. */
export const COMMIT_BUCKETS_SQL = `WITH pts AS (
    SELECT committed_at AS t, 1 AS e, 0 AS s, 0 AS a FROM committed WHERE run_id = $1 AND source = 'executed'
    UNION ALL
    SELECT at, 0, CASE outcome WHEN 'skipped' THEN count ELSE 0 END, CASE outcome WHEN 'awaited' THEN count ELSE 0 END
    FROM step_events WHERE run_id = $1 AND outcome IN ('skipped', 'awaited')),
  span AS (SELECT min(t) AS t0, greatest(max(t) - min(t), 1e-6) / $2::int AS w FROM pts),
  grouped AS (SELECT least(floor((t - span.t0) / span.w)::int, $2::int - 1) AS b,
      sum(e)::int AS executed, sum(s)::int AS skipped, sum(a)::int AS awaited
    FROM pts, span GROUP BY 1)
  SELECT span.t0 + (b + 1) * span.w AS t, executed, skipped, awaited FROM grouped, span ORDER BY b`;

/** $1 run, $2 limit: the last steps in the committed table's order, read backwards from its index. */
export const RECENT_STEPS_SQL = `SELECT step, "idemKey", "committedAt", "durationMs", source FROM (
    SELECT step, idem_key AS "idemKey", committed_at AS "committedAt", duration_ms AS "durationMs", source,
      coalesce(step, -1) AS o, idem_key COLLATE "C" AS k
    FROM committed WHERE run_id = $1 ORDER BY coalesce(step, -1) DESC, idem_key COLLATE "C" DESC LIMIT $2) last
  ORDER BY o, k`;

const EVENT_COLUMNS = `id::float8 AS id, run_id AS "runId", idem_key AS "idemKey", step, outcome, count,
  duration_ms AS "durationMs", worker_id AS "workerId", detail, at`;

/*
 * The order is by step_events.id, not by the bare name: that would be the float8 output column, which no index
 * serves, and PostgreSQL would sort every event of the run to return the last hundred.
 */

/** $1 run, $2 limit: the run's last events, read backwards from (run_id, id). */
export const RECENT_EVENTS_SQL = `SELECT * FROM (SELECT ${EVENT_COLUMNS}
  FROM step_events WHERE run_id = $1 ORDER BY step_events.id DESC LIMIT $2) last ORDER BY id`;

/** $1 run, $2 outcome, $3 limit: from (run_id, outcome, id), so a run without such events costs one index probe. */
export const RECENT_EVENTS_OF_OUTCOME_SQL = `SELECT * FROM (SELECT ${EVENT_COLUMNS}
  FROM step_events WHERE run_id = $1 AND outcome = $2 ORDER BY step_events.id DESC LIMIT $3) last ORDER BY id`;

/** $1 skew, $2 claim TTL s. */
export const COUNT_CLAIMS_SQL = `SELECT count(*)::int AS total,
  count(*) FILTER (WHERE coalesce(lease_expires_at, claimed_at + $2::float8) <= extract(epoch from now())::float8 + $1::float8)::int AS orphaned
  FROM claims`;
