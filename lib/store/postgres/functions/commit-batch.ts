/**
 * waybill_commit_batch: group commit (lib/store/postgres/steps-batch.ts). The commits that many runs of one process
 * have ready at the same moment go to the server as one statement, one transaction, one WAL flush: a jsonb array of
 * the requests waybill_commit takes (functions/commit.ts), one answer row each, in the array's order.
 *
 * A batch is written set-wise, each of waybill_commit's steps once for the whole batch: the fence's run locks, the
 * claims' delete with the results' insert, the progress, the next keys' claims, the look again in `committed`. Each
 * statement a PL/pgSQL function runs costs its executor's start and end, and one commit is about a dozen of them;
 * a batch of sixteen costs about as many as one commit (bench/RESULTS.md, #29 item 3). Every step is the one
 * waybill_commit takes, on the same rows, in the same order, so each request is answered as it would have been
 * alone. Only the next key's claim is not decided here when it is anything but fresh (held, committed, fenced): that
 * request's claim goes to waybill_claim, as in waybill_commit.
 *
 * The set-wise form needs the requests independent: their runs, keys and next keys distinct (two steps of one run
 * write one progress row), no next key another request commits (in order, its claim would meet that request's
 * claim still held; set-wise, every claim is gone before any next key is claimed), each progress write for its own
 * commit's run, and no commit that may have landed already (that one looks for its row with a snapshot of its own). A batch that is not is sent request by request
 * to waybill_commit, which sees the requests before it in the batch as if each had been sent alone (in READ
 * COMMITTED every statement of a volatile function takes a fresh snapshot).
 *
 * The planner is kept to nested loops over the tables' keys: its plans are kept per session, and a hash join would
 * read the whole of `progress` or `claims` for a batch of a few rows.
 *
 * A request the server refuses fails the batch, which is rolled back whole, and a batch waits for a row lock at
 * most lock_timeout: functions/batch.ts says why, and what the caller then does.
 */

import { LOCK_TIMEOUT } from './batch';
import { CLAIM_FIELDS, insertClaimsFrom } from './claim';
import { COMMIT_FIELDS, COMMITTED_COLUMNS, ourCommittedRow } from './commit';
import { COUNTED_SETTING } from './committed-count';
import { foldedEvents, PROGRESS_FIELDS, upsertProgress } from './progress';

/** The requests as records of their fields, each with its place in the array (`ord`, from 1). */
const REQUESTS = `ROWS FROM (jsonb_to_recordset(p_requests) AS (${COMMIT_FIELDS})) WITH ORDINALITY AS q (key, token, run,
      result, step, fingerprint, worker, duration, input, "mayHaveLanded", progress, next, ord)`;

/** The progress writes of the commits that inserted their row, as records `p`. */
const INSERTED_PROGRESS = `${REQUESTS}, jsonb_to_record(q.progress) AS p (${PROGRESS_FIELDS})
      WHERE v_inserted[q.ord] AND q.progress IS NOT NULL`;

export const COMMIT_BATCH_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_commit_batch(p_requests jsonb, p_skew float8)
RETURNS TABLE (deleted int, inserted int, "heldByUs" boolean, landed boolean, next jsonb, "runStatus" text)
LANGUAGE plpgsql VOLATILE ${LOCK_TIMEOUT} SET enable_hashjoin = off SET enable_mergejoin = off
  SET enable_seqscan = off AS $$
DECLARE
  v_count int := jsonb_array_length(p_requests);
  v_alone boolean;
  v_uncounted boolean;
  v_events boolean;
  v_set text;
  v_now float8;
  v_deleted boolean[];
  v_inserted boolean[];
  v_held boolean[];
  v_status text[];
  v_claimed text[];
  v_committed text[];
  v_q record;
BEGIN
  SELECT bool_or(coalesce(q."mayHaveLanded", false)
        OR (q.progress IS NOT NULL AND q.progress->>'run' IS DISTINCT FROM q.run))
      OR count(DISTINCT q.run) < v_count OR count(DISTINCT q.key) < v_count
      OR count(DISTINCT q.next->>'key') < count(q.next->>'key')
      OR coalesce(array_agg(q.key) && array_agg(q.next->>'key') FILTER (WHERE q.next IS NOT NULL), false),
    bool_or(q.progress IS NULL),
    bool_or((q.progress->>'skipped')::int > 0 OR (q.progress->>'awaited')::int > 0)
  INTO v_alone, v_uncounted, v_events FROM ${REQUESTS};
  IF v_alone THEN
    FOR v_q IN SELECT value FROM jsonb_array_elements(p_requests) LOOP
      RETURN QUERY SELECT * FROM waybill_commit(v_q.value, p_skew);
    END LOOP;
    RETURN;
  END IF;

  -- The fences' locks on the run rows before the claims', as waybill_commit takes them, in one order for every
  -- batch so that two never wait for each other.
  PERFORM 1 FROM runs r WHERE r.id IN (SELECT e->'next'->>'run' FROM jsonb_array_elements(p_requests) e
      WHERE e->'next'->>'fence' IS NOT NULL) ORDER BY r.id FOR KEY SHARE;
  v_set := set_config('${COUNTED_SETTING}', 'on', true);
  WITH q AS (SELECT * FROM ${REQUESTS}),
  t AS (SELECT extract(epoch from clock_timestamp())::float8 + p_skew AS now),
  del AS (DELETE FROM claims c USING q WHERE c.idem_key = q.key AND c.token = q.token RETURNING c.idem_key),
  ins AS (INSERT INTO committed (${COMMITTED_COLUMNS})
    SELECT ${ourCommittedRow('q', 't.now')}
    FROM q JOIN del ON del.idem_key = q.key CROSS JOIN t LEFT JOIN progress pr ON pr.run_id = q.run
    ON CONFLICT (idem_key) DO NOTHING RETURNING idem_key)
  SELECT array_agg(d.idem_key IS NOT NULL ORDER BY q.ord), array_agg(i.idem_key IS NOT NULL ORDER BY q.ord),
    array_agg(d.idem_key IS NULL AND EXISTS (SELECT 1 FROM claims c WHERE c.idem_key = q.key AND c.token = q.token)
      ORDER BY q.ord),
    array_agg(r.status ORDER BY q.ord)
  INTO v_deleted, v_inserted, v_held, v_status
  FROM q LEFT JOIN del d ON d.idem_key = q.key LEFT JOIN ins i ON i.idem_key = q.key LEFT JOIN runs r ON r.id = q.run;
  v_set := set_config('${COUNTED_SETTING}', 'off', true);

  v_now := extract(epoch from clock_timestamp())::float8 + p_skew;
  ${upsertProgress(`SELECT p.run, p.step, p.state, v_now, p.executed, p.skipped, p.awaited, p."saveMs" FROM ${INSERTED_PROGRESS}`, '1')};
  IF v_events THEN
    ${foldedEvents('p', 'v_now', `(SELECT p.* FROM ${INSERTED_PROGRESS}) p, LATERAL `)};
  END IF;
  IF v_uncounted THEN
    UPDATE progress pr SET committed_count = pr.committed_count + 1 FROM ${REQUESTS}
      WHERE pr.run_id = q.run AND v_inserted[q.ord] AND q.progress IS NULL;
    -- A run with no runs row (its status null) and no progress row is lone (functions/lone-runs.ts).
    IF array_position(v_status, NULL) IS NOT NULL THEN
      INSERT INTO lone_runs (run_id, at) SELECT c.run_id, c.committed_at FROM ${REQUESTS} JOIN committed c ON c.idem_key = q.key
        WHERE v_inserted[q.ord] AND q.progress IS NULL AND v_status[q.ord] IS NULL
          AND NOT EXISTS (SELECT 1 FROM progress lp WHERE lp.run_id = c.run_id)
      ON CONFLICT (run_id) DO UPDATE SET at = excluded.at WHERE excluded.at > lone_runs.at;
    END IF;
  END IF;

  -- The next keys nobody holds, claimed where the run's fence holds (its lock is ours since the top), and then
  -- looked for in committed by a statement of its own, with a fresh snapshot (functions/claim.ts says why).
  WITH ins AS (${insertClaimsFrom(
    'n',
    'v_now',
    `FROM ${REQUESTS}, jsonb_to_record(q.next) AS n (${CLAIM_FIELDS})
    WHERE v_inserted[q.ord] AND q.next IS NOT NULL
      AND v_status[q.ord] IS DISTINCT FROM 'paused' AND v_status[q.ord] IS DISTINCT FROM 'cancelled'
      AND (n.fence IS NULL
        OR EXISTS (SELECT 1 FROM runs r WHERE r.id = n.run AND r.owner = n.worker AND r.attempts = n.fence))`,
  )})
  SELECT coalesce(array_agg(idem_key), '{}') INTO v_claimed FROM ins;
  SELECT coalesce(array_agg(c.idem_key), '{}') INTO v_committed FROM committed c WHERE c.idem_key = ANY (v_claimed);

  FOR v_q IN SELECT * FROM ${REQUESTS} ORDER BY q.ord LOOP
    deleted := v_deleted[v_q.ord]::int;
    inserted := v_inserted[v_q.ord]::int;
    "heldByUs" := v_held[v_q.ord];
    landed := false;
    next := NULL;
    "runStatus" := v_status[v_q.ord];
    IF v_inserted[v_q.ord] AND v_q.next IS NOT NULL AND "runStatus" IS DISTINCT FROM 'paused'
        AND "runStatus" IS DISTINCT FROM 'cancelled' THEN
      IF v_q.next->>'key' = ANY (v_claimed) AND NOT v_q.next->>'key' = ANY (v_committed) THEN
        next := jsonb_build_object('kind', 'fresh', 'done', NULL, 'holder', NULL, 'old', NULL,
          'attempt', (v_q.next->>'attempt')::int, 'leaseExpiresAt', v_now + (v_q.next->>'lease')::float8,
          'msUntilExpiry', NULL);
      ELSE
        -- Held, committed or fenced: waybill_claim decides, as for a commit alone; a claim of ours on a key
        -- committed meanwhile goes first.
        IF v_q.next->>'key' = ANY (v_claimed) THEN
          DELETE FROM claims c WHERE c.idem_key = v_q.next->>'key' AND c.token = v_q.next->>'token';
        END IF;
        SELECT to_jsonb(c) INTO next FROM waybill_claim(v_q.next, p_skew) c;
      END IF;
    END IF;
    RETURN NEXT;
  END LOOP;
END
$$`;
