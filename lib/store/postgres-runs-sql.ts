/**
 * The PostgreSQL statements for runs and workers (postgres-runs.ts), one per operation, so each is its
 * own transaction. Same rules as postgres-sql.ts: time is the database's (`now(skew)`), isolation is
 * READ COMMITTED, and a comment says why no concurrent statement can slip in where one decision reads
 * one row and writes another. The detail texts of events are sqlite-runs.ts's, word for word.
 */
import { OUTSIDE_STATUS_SQL } from './outside-runs';
import { expiresAt, now } from './postgres-sql';

/** A runs row as RunRow, from the table aliased `a` (ambiguous names otherwise, in UPDATE … FROM). */
const run = (a: string) => `${a}.id, ${a}.workflow, ${a}.input_json AS "inputJson", ${a}.status,
  ${a}.total_steps AS "totalSteps", ${a}.owner, ${a}.lease_expires_at AS "leaseExpiresAt", ${a}.attempts, ${a}.error,
  ${a}.output_json AS "outputJson", ${a}.created_at AS "createdAt", ${a}.updated_at AS "updatedAt",
  ${a}.started_at AS "startedAt", ${a}.finished_at AS "finishedAt"`;

/** SQLite's LIKE folds ASCII letters only; so does this, where ILIKE would follow the database's locale. */
const asciiLower = (x: string) => `translate(${x}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`;

/** $1 id. */
export const GET_RUN_SQL = `SELECT ${run('r')} FROM runs r WHERE r.id = $1`;

/** $1 id, $2 workflow, $3 input, $4 total steps, $5 skew. Nothing returned: the id is taken. */
export const CREATE_RUN_SQL = `INSERT INTO runs AS r (id, workflow, input_json, status, total_steps, created_at, updated_at)
  VALUES ($1, $2, $3, 'queued', $4, ${now('$5')}, ${now('$5')})
  ON CONFLICT (id) DO NOTHING RETURNING ${run('r')}`;

/**
 * After a createRun whose connection died: is the row that holds the id the one that attempt wrote?
 * Same workflow, input and total, created since the call began ($5 s ago). $1..$4 as above, $6 skew.
 */
export const CREATED_SQL = `SELECT ${run('r')} FROM runs r WHERE r.id = $1 AND r.workflow = $2 AND r.input_json = $3
  AND r.total_steps IS NOT DISTINCT FROM $4::int AND r.created_at >= ${now('$6')} - $5::float8`;

/** A run's place in the list: the later of its row's and its progress's update (an outside client's: its claims'). */
const PLACE = `CASE WHEN r.id IS NULL
  THEN greatest(p.updated_at, coalesce((SELECT max(c.claimed_at) FROM claims c WHERE c.run_id = p.run_id), 0))
  ELSE greatest(r.updated_at, coalesce(p.updated_at, 0)) END`;
const AFTER = (place: string, id: string) =>
  `($8::float8 IS NULL OR ${place} < $8 OR (${place} = $8 AND ${id} COLLATE "C" > $9::text COLLATE "C"))`;
const RUN_FILTER = `($3::text IS NULL OR r.status = $3) AND ($4::text IS NULL OR r.workflow = $4) AND ($6::text IS NULL OR r.owner = $6)`;
const SEARCH = (id: string) => `($5::text IS NULL OR ${asciiLower(id)} LIKE ${asciiLower('$5')} ESCAPE '\\')`;

/**
 * The runs that can be on the page, so the summary is computed for a few hundred runs, not all of them.
 * A run's place is the later of two times, and the first `limit` runs by that are all among the first
 * `limit` by either time alone (a run passed over in both would have `limit` runs ahead of it), so it is
 * enough to read the top of two indexes, runs_updated and progress_updated, each with the page's filters
 * and cursor applied exactly; plus outside clients' claimed runs, as few as the claims in flight.
 */
const CANDIDATES = `cand AS (
  (SELECT r.id FROM runs r LEFT JOIN progress p ON p.run_id = r.id
    WHERE ${RUN_FILTER} AND ${SEARCH('r.id')} AND ${AFTER(PLACE, 'r.id')}
    ORDER BY r.updated_at DESC, r.id COLLATE "C" LIMIT $7)
  UNION
  (SELECT p.run_id FROM progress p LEFT JOIN runs r ON r.id = p.run_id
    WHERE CASE WHEN r.id IS NULL
        THEN ($3::text IS NULL OR $3 = ${OUTSIDE_STATUS_SQL('p.run_id')})
          AND ($4::text IS NULL OR $4 = 'external') AND $6::text IS NULL
        ELSE ${RUN_FILTER} END
      AND ${SEARCH('p.run_id')} AND ${AFTER(PLACE, 'p.run_id')}
    ORDER BY p.updated_at DESC, p.run_id COLLATE "C" LIMIT $7)
  UNION
  SELECT c.run_id FROM claims c WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id))`;

/**
 * Runs as lists show them: outside clients' runs have progress or claims but no runs row, and are listed
 * all the same. $1 claim TTL s, $2 skew, $3 status, $4 workflow, $5 LIKE pattern (\-escaped), $6 owner,
 * $7 limit, $8 and $9 the keyset cursor (the previous page's last updatedAt and id). Ids order bytewise
 * (COLLATE "C"), as SQLite orders them; float8 times cross to JS and back exactly, so the cursor matches.
 */
export const LIST_RUNS_SQL = `WITH t AS (SELECT ${now('$2')} AS now),
${CANDIDATES},
summary AS (
  SELECT r.id, r.workflow, r.status, coalesce(p.step, 0) AS step, r.total_steps AS "totalSteps",
    coalesce(p.executed, 0) AS executed, coalesce(p.skipped, 0) AS skipped, coalesce(p.awaited, 0) AS awaited,
    (SELECT count(*)::int FROM claims c WHERE c.run_id = r.id AND ${expiresAt('$1', 'c.')} <= t.now) AS "orphanedClaims",
    r.owner, r.error, r.created_at AS "createdAt", greatest(r.updated_at, coalesce(p.updated_at, 0)) AS "updatedAt"
  FROM runs r CROSS JOIN t LEFT JOIN progress p ON p.run_id = r.id
  WHERE r.id IN (SELECT id FROM cand)
  UNION ALL
  SELECT x.run_id, 'external', ${OUTSIDE_STATUS_SQL('x.run_id')},
    coalesce(p.step, 0), NULL::int, coalesce(p.executed, 0), coalesce(p.skipped, 0), coalesce(p.awaited, 0),
    (SELECT count(*)::int FROM claims c WHERE c.run_id = x.run_id AND ${expiresAt('$1', 'c.')} <= t.now),
    NULL::text, NULL::text, NULL::float8,
    greatest(coalesce(p.updated_at, 0), coalesce((SELECT max(c.claimed_at) FROM claims c WHERE c.run_id = x.run_id), 0))
  FROM (SELECT id AS run_id FROM cand) x CROSS JOIN t
  LEFT JOIN progress p ON p.run_id = x.run_id
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id))
SELECT * FROM summary s
WHERE ($3::text IS NULL OR s.status = $3) AND ($4::text IS NULL OR s.workflow = $4)
  AND ($5::text IS NULL OR ${asciiLower('s.id')} LIKE ${asciiLower('$5')} ESCAPE '\\') AND ($6::text IS NULL OR s.owner = $6)
  AND ($8::float8 IS NULL OR s."updatedAt" < $8 OR (s."updatedAt" = $8 AND s.id COLLATE "C" > $9::text COLLATE "C"))
ORDER BY s."updatedAt" DESC, s.id COLLATE "C" LIMIT $7`;

/**
 * Outside clients' runs that have nothing but committed rows (no progress, no claim), which no index finds by
 * run; sqlite-runs.ts says why each of the two reads is bounded. $1 status, $2 workflow, $3 LIKE pattern,
 * $4 limit, $5 and $6 the keyset cursor; LONE_SINCE_SQL's $7 is the full page's last place.
 */
const LONE = (from: string, also = '') => `SELECT * FROM (SELECT l.id, 'external' AS workflow, ${OUTSIDE_STATUS_SQL('l.id')} AS status,
    0 AS step, NULL::int AS "totalSteps", 0 AS executed, 0 AS skipped, 0 AS awaited, 0 AS "orphanedClaims",
    NULL::text AS owner, NULL::text AS error, NULL::float8 AS "createdAt", l.at AS "updatedAt"
  FROM (${from}) l
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = l.id) AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = l.id)
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = l.id) ${also}) s
  WHERE ($1::text IS NULL OR s.status = $1) AND ($2::text IS NULL OR s.workflow = $2)
    AND ($3::text IS NULL OR ${asciiLower('s.id')} LIKE ${asciiLower('$3')} ESCAPE '\\')
    AND ($5::float8 IS NULL OR s."updatedAt" < $5 OR (s."updatedAt" = $5 AND s.id COLLATE "C" > $6::text COLLATE "C"))
  ORDER BY s."updatedAt" DESC, s.id COLLATE "C" LIMIT $4`;
export const LONE_SINCE_SQL = LONE(`SELECT run_id AS id, max(committed_at) AS at FROM committed
  WHERE committed_at >= $7::float8 AND ($5::float8 IS NULL OR committed_at <= $5) GROUP BY run_id`,
'AND ($5::float8 IS NULL OR NOT EXISTS (SELECT 1 FROM committed c WHERE c.run_id = l.id AND c.committed_at > $5))');
export const LONE_ALL_SQL = `WITH RECURSIVE ids(id) AS (
    SELECT (SELECT min(run_id) FROM committed)
    UNION ALL
    SELECT (SELECT min(c.run_id) FROM committed c WHERE c.run_id > ids.id) FROM ids WHERE ids.id IS NOT NULL)
  ${LONE(`SELECT id, (SELECT max(c.committed_at) FROM committed c WHERE c.run_id = ids.id) AS at FROM ids
    WHERE id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = ids.id)`)}`;

/**
 * Takes one runnable run: queued, or running with a passed run lease or an owner marked stopped, never one
 * of the runs the caller has in hand ($5, text[]), and only run $6 when given. $1 worker, $2 workflows
 * (text[]), $3 lease s, $4 skew.
 *
 * - pick: the oldest runnable run, locked. SKIP LOCKED passes over a row another claimer has locked, so
 *         claimers on any number of hosts never wait for each other nor take the same run; LIMIT 1 stops
 *         at the first row it could lock. Under READ COMMITTED, a row changed since the snapshot is
 *         re-read at its newest version and the WHERE re-checked on it: a run another worker took and
 *         committed meanwhile no longer qualifies, and the next one is tried (never a spurious "none").
 *         MATERIALIZED: the pick runs once, whatever the plan.
 * - taken: the run becomes ours; pick.owner (the newest version's) is who we took it from.
 * - the `expired` event, when that was another worker.
 */
export const CLAIM_RUN_SQL = `WITH pick AS MATERIALIZED (
  SELECT p.id, p.owner FROM runs p
  WHERE p.workflow = ANY($2::text[]) AND p.id <> ALL($5::text[]) AND ($6::text IS NULL OR p.id = $6::text)
    AND (p.status = 'queued' OR (p.status = 'running' AND (p.lease_expires_at <= ${now('$4')}
      OR p.owner IN (SELECT w.id FROM workers w WHERE w.stopped_at IS NOT NULL))))
  ORDER BY p.created_at, p.id COLLATE "C" LIMIT 1
  FOR UPDATE OF p SKIP LOCKED),
taken AS (UPDATE runs r SET status = 'running', owner = $1::text, lease_expires_at = t.now + $3::float8,
    attempts = r.attempts + 1, started_at = coalesce(r.started_at, t.now), updated_at = t.now
  FROM pick, (SELECT ${now('$4')} AS now) t WHERE r.id = pick.id
  RETURNING ${run('r')}, pick.owner AS "previousOwner"),
expired AS (INSERT INTO step_events (run_id, outcome, count, worker_id, detail, at)
  SELECT taken.id, 'expired', 1, $1::text,
    'run lease of ' || taken."previousOwner" || ' passed or its worker died; resumed by ' || $1::text, taken."updatedAt"
  FROM taken WHERE taken."previousOwner" <> $1::text)
SELECT id, workflow, "inputJson", status, "totalSteps", owner, "leaseExpiresAt", attempts, error, "outputJson",
  "createdAt", "updatedAt", "startedAt", "finishedAt" FROM taken`;

/**
 * After a claimRun whose connection died: a running run of ours that the caller was never handed is the
 * one that attempt took. Its lease is renewed and it is handed over now. $1 worker, $2 ids the caller
 * already holds (text[]), $3 lease s, $4 skew.
 */
export const ADOPT_RUN_SQL = `UPDATE runs r SET lease_expires_at = ${now('$4')} + $3::float8
  WHERE r.id = (SELECT a.id FROM runs a WHERE a.owner = $1 AND a.status = 'running' AND a.id <> ALL($2::text[])
    ORDER BY a.updated_at DESC LIMIT 1)
  AND r.owner = $1 AND r.status = 'running'
  RETURNING ${run('r')}`;

/**
 * Which execution a call speaks for: the run's `attempts` when claimRun handed it out (null: the worker id
 * alone, as before). A worker id cannot tell a stalled execution from its successor under the same id.
 */
const fence = (p: string) => `(${p}::int IS NULL OR attempts = ${p}::int)`;

/** $1 id, $2 worker, $3 lease s, $4 skew, $5 attempt. */
export const RENEW_RUN_SQL = `UPDATE runs SET lease_expires_at = ${now('$4')} + $3::float8
  WHERE id = $1 AND owner = $2 AND ${fence('$5')} AND status = 'running'`;

/**
 * A run paused while its last step ran still completes. $1 id, $2 worker, $3 status, $4 error, $5 output,
 * $6 skew, $7 attempt.
 */
export const FINISH_RUN_SQL = `UPDATE runs SET status = $3, error = $4, output_json = $5, owner = NULL,
  lease_expires_at = NULL, finished_at = ${now('$6')}, updated_at = ${now('$6')}
  WHERE id = $1 AND owner = $2 AND ${fence('$7')} AND status IN ('running', 'paused')`;

/**
 * After a finishRun whose connection died and that now changes nothing: is the run ended the way that
 * attempt asked, since the call began ($5 s ago)? $1 id, $2 status, $3 error, $4 output, $6 skew.
 */
export const FINISHED_SQL = `SELECT 1 FROM runs WHERE id = $1 AND owner IS NULL AND status = $2
  AND error IS NOT DISTINCT FROM $3::text AND output_json IS NOT DISTINCT FROM $4::text
  AND finished_at >= ${now('$6')} - $5::float8`;

/** $1 id, $2 worker, $3 skew, $4 attempt. */
export const RELEASE_RUN_SQL = `UPDATE runs SET status = CASE status WHEN 'running' THEN 'queued' ELSE status END,
  owner = NULL, lease_expires_at = NULL, updated_at = ${now('$3')} WHERE id = $1 AND owner = $2 AND ${fence('$4')}`;

/**
 * An operator's action. $1 id, $2 statuses it may leave (text[]), $3 status it leads to, $4 action, $5 actor,
 * $6 skew. `cur` locks the run and reads its newest status (READ COMMITTED re-reads a row changed since the
 * snapshot when it locks it), so the transition is judged on the status it changes. Returns no row for an
 * unknown run; `from` and a null id when the status does not allow the action.
 */
export const ACT_SQL = `WITH t AS (SELECT ${now('$6')} AS now),
cur AS (SELECT c.id AS cur_id, c.status AS cur_status FROM runs c WHERE c.id = $1 FOR UPDATE),
upd AS (UPDATE runs r SET status = $3::text, updated_at = t.now,
    error = CASE WHEN $3::text = 'queued' THEN NULL ELSE r.error END,
    finished_at = CASE WHEN $3::text = 'cancelled' THEN t.now WHEN $3::text = 'queued' THEN NULL ELSE r.finished_at END,
    -- A paused running run keeps its owner until that worker notices and lets go (renewRunLease tells it):
    -- its last step may still complete it. A cancelled one is abandoned: nothing its worker does can finish
    -- it, the worker learns of it from the status alone, and a dead worker would otherwise own it forever.
    owner = CASE WHEN r.status = 'running' AND $3::text <> 'cancelled' THEN r.owner ELSE NULL END,
    lease_expires_at = CASE WHEN r.status = 'running' AND $3::text <> 'cancelled' THEN r.lease_expires_at ELSE NULL END
  FROM cur, t WHERE r.id = cur.cur_id AND cur.cur_status = ANY($2::text[])
  RETURNING ${run('r')}),
ev AS (INSERT INTO step_events (run_id, outcome, count, detail, at)
  SELECT cur.cur_id, 'operator', 1, $4::text || ' by ' || $5::text || ': ' || cur.cur_status || ' → ' || $3::text, t.now
  FROM cur, t WHERE EXISTS (SELECT 1 FROM upd))
SELECT cur.cur_status AS "from", upd.* FROM cur LEFT JOIN upd ON true`;

/**
 * After an actOnRun whose connection died: did that attempt land? It did if the run's latest operator
 * event is this action by this actor ($2 its detail's start, `pause by ann: `; $3 its end, ` → paused`),
 * recorded since the call began ($4 s ago). $1 id, $5 skew.
 */
export const ACTED_SQL = `SELECT ${run('r')} FROM runs r WHERE r.id = $1 AND EXISTS (
  SELECT 1 FROM (SELECT e.detail, e.at FROM step_events e WHERE e.run_id = $1 AND e.outcome = 'operator'
    ORDER BY e.id DESC LIMIT 1) last
  WHERE starts_with(last.detail, $2) AND right(last.detail, char_length($3)) = $3 AND last.at >= ${now('$5')} - $4::float8)`;

/** $1 id, $2 host, $3 pid, $4 skew, $5 machine. */
export const REGISTER_WORKER_SQL = `INSERT INTO workers (id, host, pid, machine, started_at, heartbeat_at)
  VALUES ($1, $2, $3, $5, ${now('$4')}, ${now('$4')})
  ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, machine = excluded.machine,
    started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL`;

/** $1 id, $2 skew. */
export const HEARTBEAT_WORKER_SQL = `UPDATE workers SET heartbeat_at = ${now('$2')} WHERE id = $1`;

/** $1 id, $2 skew. */
export const STOP_WORKER_SQL = `UPDATE workers SET stopped_at = ${now('$2')} WHERE id = $1 AND stopped_at IS NULL`;

export const LIST_WORKERS_SQL = `SELECT id, host, pid, machine, started_at AS "startedAt", heartbeat_at AS "heartbeatAt",
  stopped_at AS "stoppedAt" FROM workers ORDER BY started_at DESC`;

/**
 * A worker known dead: stopped, its claims deleted, one `expired` event per claim. A claim taken over
 * meanwhile has another worker_id on its newest version, which the DELETE re-checks, so it is left alone.
 * $1 worker, $2 reason, $3 skew.
 */
export const MARK_WORKER_DEAD_SQL = `WITH t AS (SELECT ${now('$3')} AS now),
stopped AS (UPDATE workers SET stopped_at = t.now FROM t WHERE id = $1 AND stopped_at IS NULL),
del AS (DELETE FROM claims WHERE worker_id = $1 RETURNING idem_key, run_id, step),
ev AS (INSERT INTO step_events (run_id, idem_key, step, outcome, count, worker_id, detail, at)
  SELECT del.run_id, del.idem_key, del.step, 'expired', 1, $1::text,
    'worker ' || $1::text || ' died (' || $2::text || '); claim released, the step runs again', t.now
  FROM del, t)
SELECT count(*)::int AS n FROM del`;
