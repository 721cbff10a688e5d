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
 * A request (steps-batch.ts, commitFields) is one object, the shape of an element of waybill_commit_batch's array.
 * A commit sent alone calls waybill_commit_fields with its fields as arguments, the nested progress and next spread:
 * reading them from JSON on the server (jsonb_to_record, three statements) cost more than the rest of the commit's
 * parsing together (bench/RESULTS.md, "The lone commit's arguments"). waybill_commit takes the object and calls it.
 * The functions' argument and return types are fixed: CREATE OR REPLACE cannot change them, so a change takes a
 * migration that drops the old signature first.
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

/** A field of a jsonb_to_record column list: its name as the list spells it (quoted when mixed case), and its type. */
type Field = { name: string; type: string };

const fieldsOf = (list: string): Field[] =>
  list.split(',').map((field) => {
    const [name, type] = field.trim().split(/\s+/);
    return { name: name!, type: type! };
  });

/**
 * waybill_commit_fields' arguments: the request's own fields (its record `q`), then its progress write's (`p`) and
 * its next claim's (`n`), which the request object holds under `within`; each argument is named after its part.
 * The nested parts are spread, so that nothing of a request is parsed from JSON on the server.
 */
const PARTS = [
  { label: 'q', within: null, fields: fieldsOf(COMMIT_FIELDS).filter((f) => f.type !== 'jsonb') },
  { label: 'p', within: 'progress', fields: fieldsOf(PROGRESS_FIELDS) },
  { label: 'n', within: 'next', fields: fieldsOf(CLAIM_FIELDS) },
] as const;

type Part = (typeof PARTS)[number];
const bare = (name: string) => name.replaceAll('"', '');
const argumentOf = ({ within }: Part, { name }: Field) => {
  const named = `${within ?? 'commit'}_${bare(name)}`;
  return named === named.toLowerCase() ? named : `"${named}"`;
};

/**
 * The commit request's fields in waybill_commit_fields' order, each with the object that holds it (`within` the
 * request, or the request itself): what the client sends (steps-batch.ts, commitArguments).
 */
export const COMMIT_ARGUMENTS: readonly { within: Part['within']; field: string; type: string }[] = PARTS.flatMap(
  ({ within, fields }) => fields.map(({ name, type }) => ({ within, field: bare(name), type })),
);

const signature = PARTS.map((part) => part.fields.map((f) => `${argumentOf(part, f)} ${f.type}`).join(', ')).join(
  ',\n  ',
);

/** A part's record as block variables under its label, each from its argument: `q.key` reads as it did from a record. */
const declared = (label: Part['label']) => {
  const part = PARTS.find((p) => p.label === label)!;
  return part.fields.map((f) => `${f.name} ${f.type} := ${argumentOf(part, f)};`).join(' ');
};

/** The arguments of waybill_commit_fields read from a request object `json`, as waybill_commit takes it. */
const argumentsFrom = (json: string) =>
  PARTS.map(({ within, fields }) =>
    fields.map(({ name, type }) => `(${json} #>> '{${within ? `${within},` : ''}${bare(name)}}')::${type}`).join(', '),
  ).join(',\n    ');

/** The next claim's fields as the object waybill_claim takes (the request's `next`), from the block `n`. */
const nextObject = `jsonb_build_object(${PARTS[2].fields.map(({ name }) => `'${bare(name)}', n.${name}`).join(', ')})`;

/** waybill_commit_fields' answer, one JSON text of what each of waybill_commit's columns says. */
const ANSWER = `json_build_object('deleted', deleted, 'inserted', inserted, 'heldByUs', "heldByUs", 'landed', landed,
      'next', next, 'runStatus', "runStatus")::text`;

/**
 * The request as one object, waybill_commit_batch's element: what a batch that must be sent request by request
 * calls, and what a worker of the release before waybill_commit_fields calls during a rolling upgrade. Its answer
 * is waybill_commit_fields', as the columns it always had.
 */
export const COMMIT_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_commit(p_request jsonb, p_skew float8,
  OUT deleted int, OUT inserted int, OUT "heldByUs" boolean, OUT landed boolean, OUT next jsonb,
  OUT "runStatus" text)
LANGUAGE sql VOLATILE AS $$
  SELECT (a->>'deleted')::int, (a->>'inserted')::int, (a->>'heldByUs')::boolean, (a->>'landed')::boolean,
    nullif(a->'next', 'null'), a->>'runStatus'
  FROM (SELECT waybill_commit_fields(${argumentsFrom('p_request')}, p_skew)::jsonb AS a) x
$$`;

export const COMMIT_FIELDS_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_commit_fields(${signature}, p_skew float8)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
<<q>>
DECLARE
  ${declared('q')}
  deleted int;
  inserted int;
  "heldByUs" boolean;
  landed boolean := false;
  next jsonb;
  "runStatus" text;
  v_now float8;
  v_set text;
BEGIN
  -- The fence's lock on the run row first, before the claim's: a rerun locks the run, then deletes its claims,
  -- and taking the two in the other order here would deadlock with it.
  IF next_fence IS NOT NULL THEN
    PERFORM 1 FROM runs r WHERE r.id = next_run FOR KEY SHARE;
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

  IF inserted = 1 THEN
    -- A progress write always names its run.
    IF progress_run IS NOT NULL THEN
      <<p>>
      DECLARE
        ${declared('p')}
      BEGIN
        v_now := extract(epoch from clock_timestamp())::float8 + p_skew;
        ${writeProgress('p', 'v_now', '(p.run = q.run)::int')};
        IF p.run IS DISTINCT FROM q.run THEN
          ${countOurs};
          ${recordLoneOurs('q', '"runStatus"')};
        END IF;
      END;
    ELSE
      ${countOurs};
      ${recordLoneOurs('q', '"runStatus"')};
    END IF;
    IF next_key IS NULL OR "runStatus" IS NOT DISTINCT FROM 'paused' OR "runStatus" IS NOT DISTINCT FROM 'cancelled' THEN
      RETURN ${ANSWER};
    END IF;
    <<n>>
    DECLARE
      ${declared('n')}
    BEGIN
      IF n.fence IS NULL THEN
        v_now := extract(epoch from clock_timestamp())::float8 + p_skew;
        ${insertClaim('n', 'v_now')};
        IF FOUND THEN
          PERFORM 1 FROM committed c WHERE c.idem_key = n.key;
          IF NOT FOUND THEN
            next := jsonb_build_object('kind', 'fresh', 'done', NULL, 'holder', NULL, 'old', NULL,
              'attempt', n.attempt, 'leaseExpiresAt', v_now + n.lease, 'msUntilExpiry', NULL);
            RETURN ${ANSWER};
          END IF;
          DELETE FROM claims c WHERE c.idem_key = n.key AND c.token = n.token;
        END IF;
      END IF;
      SELECT to_jsonb(c) INTO next FROM waybill_claim(${nextObject}, p_skew) c;
    END;
  ELSIF inserted = 0 AND q."mayHaveLanded" THEN
    landed := EXISTS (SELECT 1 FROM committed c
      WHERE c.idem_key = q.key AND c.source = 'executed' AND c.run_id = q.run AND c.result_json = q.result
        AND c.step IS NOT DISTINCT FROM q.step AND c.fingerprint IS NOT DISTINCT FROM q.fingerprint
        AND c.worker_id IS NOT DISTINCT FROM q.worker AND c.duration_ms = q.duration);
  END IF;
  RETURN ${ANSWER};
END
$$`;
