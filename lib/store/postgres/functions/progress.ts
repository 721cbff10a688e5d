/**
 * waybill_save_progress: the run's position and its counters, as saveProgress writes them and as a commit does
 * once it has inserted its result, so an executed step costs one transaction, not two. Skips and awaits ride
 * with it as one event each, so they never cost a transaction of their own.
 *
 * Its request is the `progress` object of a commit's request (steps-batch.ts, progressFields), and its time the
 * clock when the call begins (clock_timestamp()): in a batch, a request that waited behind a neighbour's row lock
 * is dated after the wait.
 */
/** The fields of a progress request, as a record of them is read (jsonb_to_record's column list). */
export const PROGRESS_FIELDS = `run text, step int, state text, executed int, skipped int, awaited int, "saveMs" float8`;

const countAdded = (added: string) => `, committed_count = progress.committed_count + ${added}`;

/**
 * The upsert of the progress rows `rows` yields (a VALUES list or a query, in the order run, step, state, now,
 * executed, skipped, awaited, saveMs): here, in a commit that inserted its result (functions/commit.ts), which
 * runs it in its own body rather than calling this function, and for a whole batch of them (commit-batch.ts).
 */
export const upsertProgress = (
  rows: string,
  /**
   * The committed rows this transaction added to the row's run and left uncounted (functions/committed-count.ts):
   * a commit's own, counted here at no cost beyond the write. A row this write makes counts them in its trigger.
   */
  added?: string,
) => `INSERT INTO progress (run_id, step, state_json, updated_at, executed, skipped, awaited, save_ms)
    ${rows}
    ON CONFLICT (run_id) DO UPDATE SET step = excluded.step, state_json = excluded.state_json,
      updated_at = excluded.updated_at, executed = progress.executed + excluded.executed,
      skipped = progress.skipped + excluded.skipped, awaited = progress.awaited + excluded.awaited,
      save_ms = coalesce(excluded.save_ms, progress.save_ms)${added ? countAdded(added) : ''}`;

/** The skips and awaits a progress request `p` folds in, as one event each; `from` what `p` is read from. */
export const foldedEvents = (p: string, now: string, from = '') =>
  `INSERT INTO step_events (run_id, step, outcome, count, at)
      SELECT ${p}.run, ${p}.step, v.outcome, v.n, ${now}
      FROM ${from}(VALUES ('skipped', ${p}.skipped), ('awaited', ${p}.awaited)) AS v (outcome, n) WHERE v.n > 0`;

/** The write itself, from the record `p` of a progress request's fields at the time `now`. */
export const writeProgress = (p: string, now: string, added?: string) => `${upsertProgress(
  `VALUES (${p}.run, ${p}.step, ${p}.state, ${now}, ${p}.executed, ${p}.skipped, ${p}.awaited, ${p}."saveMs")`,
  added,
)};
  -- A statement of its own, only when there is something to fold: an INSERT that writes nothing still opens
  -- every index of step_events, a cost each commit would pay.
  IF ${p}.skipped > 0 OR ${p}.awaited > 0 THEN
    ${foldedEvents(p, now)};
  END IF`;

export const SAVE_PROGRESS_FUNCTION = `CREATE OR REPLACE FUNCTION waybill_save_progress(p_request jsonb, p_skew float8)
RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_now float8 := extract(epoch from clock_timestamp())::float8 + p_skew;
  q record;
BEGIN
  SELECT * INTO q FROM jsonb_to_record(p_request) AS x (${PROGRESS_FIELDS});
  ${writeProgress('q', 'v_now')};
END
$$`;
